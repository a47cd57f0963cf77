package check

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

func TestConditions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := marksEvery(t0, time.Second)
	snap := func(rv uint64, facts ...string) record.Snapshot { return record.Snapshot{Mark: at(rv), Facts: facts} }
	const (
		nic, link = "NetworkInterfaceCard=Kaput", "PrivateLink=severed"
		taint     = "pressure:NoExecute"
	)
	ct := &scenario.ConditionTaint{Taint: scenario.Taint{Key: "pressure", Effect: "NoExecute"}, Within: 5 * time.Second,
		While: []scenario.ConditionWant{{Type: "NetworkInterfaceCard", Status: "Kaput|Ruined"}, {Type: "PrivateLink", Status: "severed"}}}
	budget := *ct
	budget.MaxTainted = 1
	keep := *ct
	keep.Keep = true
	none := 0
	tests := []struct {
		name string
		exp  scenario.Expect
		recs []record.NodeRecord
		want []string
	}{
		{"tainted while matching, cleared in time", scenario.Expect{ConditionTaint: ct}, []record.NodeRecord{{
			Conditions: []record.Snapshot{snap(1, nic, link), snap(10, link)},
			Taints:     []record.Snapshot{snap(2, taint), snap(12)},
			Evictions:  []record.Eviction{{Pod: "ns/a", Mark: at(3)}},
		}}, nil},
		{"one condition only", scenario.Expect{ConditionTaint: ct}, []record.NodeRecord{{
			Conditions: []record.Snapshot{snap(1, nic)},
			Taints:     []record.Snapshot{snap(2, taint)},
			Evictions:  []record.Eviction{{Pod: "ns/a", Mark: at(3)}},
		}}, []string{KindTaintedWithoutMatch, KindEvictedWithoutMatch}},
		{"a status that only contains an alternative", scenario.Expect{ConditionTaint: ct}, []record.NodeRecord{{
			Conditions: []record.Snapshot{snap(1, "NetworkInterfaceCard=NotKaput", link)},
			Taints:     []record.Snapshot{snap(2, taint)},
		}}, []string{KindTaintedWithoutMatch}},
		{"not cleared within the bound", scenario.Expect{ConditionTaint: ct}, []record.NodeRecord{{
			Conditions: []record.Snapshot{snap(1, nic, link), snap(10, link)},
			Taints:     []record.Snapshot{snap(2, taint), snap(16)},
		}}, []string{KindTaintedWithoutMatch}},
		{"kept after clear, as allowed", scenario.Expect{ConditionTaint: &keep}, []record.NodeRecord{{
			Conditions: []record.Snapshot{snap(1, nic, link), snap(10, link)},
			Taints:     []record.Snapshot{snap(2, taint)},
		}}, nil},
		{"two at once, budget one", scenario.Expect{ConditionTaint: &budget}, []record.NodeRecord{
			{Name: "a", Conditions: []record.Snapshot{snap(1, nic, link)}, Taints: []record.Snapshot{snap(2, taint), snap(5)}},
			{Name: "b", Conditions: []record.Snapshot{snap(1, nic, link)}, Taints: []record.Snapshot{snap(4, taint)}},
		}, []string{KindBudgetExceeded}},
		{"one after the other, budget one", scenario.Expect{ConditionTaint: &budget}, []record.NodeRecord{
			{Name: "a", Conditions: []record.Snapshot{snap(1, nic, link)}, Taints: []record.Snapshot{snap(2, taint), snap(5)}},
			{Name: "b", Conditions: []record.Snapshot{snap(1, nic, link)}, Taints: []record.Snapshot{snap(6, taint)}},
		}, nil},
		{"evictions over the bound", scenario.Expect{MaxEvictions: &none}, []record.NodeRecord{{
			Evictions: []record.Eviction{{Pod: "ns/a", Mark: at(3)}},
		}}, []string{KindEvicted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Conditions(tt.recs, t0, t0.Add(time.Minute), tt.exp)
			var kinds []string
			for _, v := range got {
				kinds = append(kinds, v.Kind)
			}
			if diff := cmp.Diff(tt.want, kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s\n%+v", diff, got)
			}
		})
	}
}

func TestReplacements(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) record.Mark {
		return record.Mark{RV: uint64(s), Time: t0.Add(time.Duration(s) * time.Second)}
	}
	dead := record.NodeRecord{Name: "dead", KubeletStopped: t0.Add(10 * time.Second),
		Bindings: []record.Binding{{Pod: "ns/db-0", Stateful: true, Mark: at(2), Running: at(3)}, {Pod: "ns/web", Mark: at(2)}}}
	replaced := func(s int) record.NodeRecord {
		return record.NodeRecord{Name: "alive", Bindings: []record.Binding{{Pod: "ns/db-0", Stateful: true, Mark: at(s - 1), Running: at(s)}}}
	}
	exp := scenario.Expect{ReplacementWithin: 30 * time.Second}
	tests := []struct {
		name    string
		recs    []record.NodeRecord
		end     int
		want    []string
		latency []time.Duration
		pending bool
	}{
		{"replaced in time", []record.NodeRecord{dead, replaced(35)}, 60, nil, []time.Duration{25 * time.Second}, false},
		{"replaced late", []record.NodeRecord{dead, replaced(50)}, 60, []string{KindReplacementLate}, []time.Duration{40 * time.Second}, false},
		{"never replaced", []record.NodeRecord{dead}, 60, []string{KindReplacementLate}, nil, true},
		{"not replaced yet, within the bound", []record.NodeRecord{dead}, 20, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, lat := Conditions(tt.recs, t0, t0.Add(time.Duration(tt.end)*time.Second), exp)
			var kinds []string
			for _, v := range got {
				kinds = append(kinds, v.Kind)
			}
			if diff := cmp.Diff(tt.want, kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.latency, lat); diff != "" {
				t.Errorf("latencies (-want +got):\n%s", diff)
			}
			if p := ReplacementsPending(tt.recs); p != tt.pending {
				t.Errorf("ReplacementsPending = %v, want %v", p, tt.pending)
			}
		})
	}
}

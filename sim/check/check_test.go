package check

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/startupgate/startupgate/sim/record"
)

func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := marksEvery(t0, time.Millisecond)
	workload := func(rv uint64) record.Binding { return record.Binding{Pod: "ns/w", Mark: at(rv)} }
	agent := func(rv uint64) record.Binding {
		return record.Binding{Pod: "ns/agent", Mark: at(rv), Tolerates: true}
	}

	tests := []struct {
		name           string
		rec            record.NodeRecord
		bounds         Bounds
		wantKinds      []string
		wantStuck      int
		wantTolerating int
	}{
		{
			name: "bound after release",
			rec:  record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []record.Binding{workload(11)}},
		},
		{
			name:      "bound before release",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []record.Binding{workload(9)}},
			wantKinds: []string{KindEarlyPod},
		},
		{
			name:      "never released",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Bindings: []record.Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod},
			wantStuck: 1,
		},
		{
			name:           "tolerating agent early is reported, not a violation",
			rec:            record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), Bindings: []record.Binding{agent(5)}},
			wantTolerating: 1,
		},
		{
			name: "excluded node is not judged",
			rec:  record.NodeRecord{Gated: false, Created: at(1), Bindings: []record.Binding{workload(2)}},
		},
		{
			name:      "never tainted is not stuck, but its early pods count",
			rec:       record.NodeRecord{Gated: true, Created: at(1), Bindings: []record.Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod},
		},
		{
			name:      "released before init ready",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(12), Released: at(10)},
			wantKinds: []string{KindPrematureRelease},
		},
		{
			name:   "released without readiness after max hold under the release policy",
			rec:    record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Released: at(3001)},
			bounds: Bounds{TimeoutRelease: 3 * time.Second},
		},
		{
			name:   "released at min hold counted from a creationTimestamp the watch saw late",
			rec:    record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(900), Created: at(900), CreatedAt: t0, InitReady: at(950), Released: at(5000)},
			bounds: Bounds{MinHold: 5 * time.Second},
		},
		{
			name:      "released long after ready",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(2000)},
			bounds:    Bounds{ReleasedWithin: time.Second},
			wantKinds: []string{KindLateRelease},
		},
		{
			name:   "slow to become ready, prompt release: not late",
			rec:    record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(30000), Released: at(30050)},
			bounds: Bounds{ReleasedWithin: time.Second},
		},
		{
			name:      "released before min hold",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10)},
			bounds:    Bounds{MinHold: 5 * time.Second},
			wantKinds: []string{KindEarlyRelease},
		},
		{
			name:      "backfill tainted a busy node",
			rec:       record.NodeRecord{Gated: true, Tainted: at(10), Created: at(1), InitReady: at(12), Released: at(20), Bindings: []record.Binding{workload(5)}},
			wantKinds: []string{KindEarlyPod, KindBusyBackfilled},
		},
		{
			name: "backfill of an idle node",
			rec:  record.NodeRecord{Gated: true, Tainted: at(3), Created: at(1), InitReady: at(12), Released: at(20), Bindings: []record.Binding{workload(25)}},
		},
		{
			name: "deleted before release is not stuck",
			rec:  record.NodeRecord{Gated: true, Created: at(1), Deleted: at(5)},
		},
		{
			name:      "late release",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), Released: at(3000)},
			bounds:    Bounds{ReleasedWithin: time.Second, TimeoutRelease: time.Second},
			wantKinds: []string{KindLateRelease},
		},
		{
			name:      "foreign taint lost",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), LostTaints: []string{"x:NoSchedule"}},
			wantKinds: []string{KindForeignTaintLost},
		},
		{
			name:      "completedAt rewritten",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), CompletedAt: []string{"a=1", "a=2"}},
			wantKinds: []string{KindCompletedRewritten},
		},
		{
			name: "two rules' completions, each set once",
			rec:  record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), CompletedAt: []string{"a=1", "a.gpu=2"}},
		},
		{
			name:      "completion removed",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), CompletedAt: []string{"a=1", "a="}},
			wantKinds: []string{KindCompletedRewritten},
		},
		{
			name:      "a dry-run rule wrote",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), DryRunWrites: []string{"shadow"}},
			wantKinds: []string{KindDryRunWrote},
		},
		{
			name:      "tainted at creation outside the rule's selector",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10), OutsideAtCreate: []string{"gpu"}},
			wantKinds: []string{KindTaintOutsideSelector},
		},
		{
			name: "continuous: re-tainted in time, nothing bound in the window",
			rec: record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10),
				Unready: []record.Window{{From: at(100), To: at(3000)}}, Retainted: []record.Mark{at(600)}, Bindings: []record.Binding{workload(50), workload(3100)}},
			bounds: Bounds{RetaintWithin: time.Second},
		},
		{
			name: "continuous: a Pod bound in the window",
			rec: record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10),
				Unready: []record.Window{{From: at(100), To: at(3000)}}, Retainted: []record.Mark{at(600)}, Bindings: []record.Binding{workload(300)}},
			wantKinds: []string{KindBoundWhileUnready},
		},
		{
			name: "continuous: the taint never came back",
			rec: record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10),
				Unready: []record.Window{{From: at(100)}}},
			bounds:    Bounds{RetaintWithin: time.Second},
			wantKinds: []string{KindRetaintLate},
		},
		{
			name: "continuous: a flap shorter than the bound needs no re-taint",
			rec: record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10),
				Unready: []record.Window{{From: at(100), To: at(400)}}},
			bounds: Bounds{RetaintWithin: time.Second},
		},
		{
			name:      "left the selector and kept the taint",
			rec:       record.NodeRecord{Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), OutsideNow: []string{"gpu"}},
			wantKinds: []string{KindTaintOutsideSelector},
			wantStuck: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Name = "n"
			if tt.rec.CreatedAt.IsZero() {
				tt.rec.CreatedAt = tt.rec.Created.Time // creationTimestamp, as the gate counts
			}
			v := Check([]record.NodeRecord{tt.rec}, t0, tt.bounds)
			var kinds []string
			for _, viol := range v.Violations {
				kinds = append(kinds, viol.Kind)
			}
			if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
				t.Errorf("violation kinds (-want +got):\n%s", diff)
			}
			if v.Stuck != tt.wantStuck || v.EarlyTolerating != tt.wantTolerating {
				t.Errorf("stuck %d tolerating %d, want %d %d", v.Stuck, v.EarlyTolerating, tt.wantStuck, tt.wantTolerating)
			}
		})
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	want := Percentiles{P50: 50, P90: 90, P99: 99, Max: 100}
	if diff := cmp.Diff(want, PercentilesOf(ds)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Percentiles{}, PercentilesOf(nil)); diff != "" {
		t.Errorf("empty (-want +got):\n%s", diff)
	}
}

// TestHeld: a gated node counts until it is released or deleted; a node the gate does not
// select never counts.
func TestHeld(t *testing.T) {
	at := record.Mark{RV: 1, Time: time.Unix(1, 0)}
	for name, tc := range map[string]struct {
		recs []record.NodeRecord
		want int
	}{
		"none":               {nil, 0},
		"gated, held":        {[]record.NodeRecord{{Gated: true}}, 1},
		"gated, released":    {[]record.NodeRecord{{Gated: true, Released: at}}, 0},
		"gated, deleted":     {[]record.NodeRecord{{Gated: true, Deleted: at}}, 0},
		"not gated":          {[]record.NodeRecord{{}}, 0},
		"one of two pending": {[]record.NodeRecord{{Gated: true, Released: at}, {Gated: true}}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Held(tc.recs); got != tc.want {
				t.Errorf("Held = %d, want %d", got, tc.want)
			}
		})
	}
}

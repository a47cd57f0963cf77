package check

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// TestStuckAfterRegistration: a released node that ends with a startup rule's taint back is
// stuck; one whose taint came back and went again, one never released, one deleted, one
// re-gated by a reboot, and one with another rule's taint are not.
func TestStuckAfterRegistration(t *testing.T) {
	const gate = "startup.k8s.io/initializing:NoSchedule"
	at := func(rv uint64) record.Mark { return record.Mark{RV: rv, Time: time.Unix(int64(rv), 0)} }
	snap := func(rv uint64, facts ...string) record.Snapshot { return record.Snapshot{Mark: at(rv), Facts: facts} }
	released := func(taints ...record.Snapshot) record.NodeRecord {
		return record.NodeRecord{Name: "n", Released: at(10), Taints: append([]record.Snapshot{snap(1, gate), snap(10)}, taints...)}
	}
	ms := func(m record.Mark) int64 { return m.Time.UnixMilli() }
	for _, tt := range []struct {
		name string
		rec  record.NodeRecord
		want int
	}{
		{name: "taint back at the end", rec: released(snap(20, gate, "karpenter.sh/unregistered:NoExecute")), want: 1},
		{name: "back and off again", rec: released(snap(20, gate), snap(21)), want: 0},
		{name: "released, never back", rec: released(), want: 0},
		{name: "another rule's taint", rec: released(snap(20, "example.com/gpu:NoSchedule")), want: 0},
		{name: "never released", rec: record.NodeRecord{Name: "n", Taints: []record.Snapshot{snap(1, gate)}}, want: 0},
		{name: "deleted", rec: func() record.NodeRecord { r := released(snap(20, gate)); r.Deleted = at(30); return r }(), want: 0},
		{name: "re-gated by a reboot", rec: func() record.NodeRecord {
			r := released(snap(20, gate))
			r.Reboots = []record.Reboot{{Seen: at(19), Regated: at(20)}}
			return r
		}(), want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := stuckAfterRegistration(&tt.rec, []string{gate}, ms)
			if len(got) != tt.want {
				t.Fatalf("%d violations %+v, want %d", len(got), got, tt.want)
			}
			for _, v := range got {
				if v.Kind != KindStuckAfterRegistration || v.RV != 20 || v.ReleasedRV != 10 {
					t.Errorf("violation %+v, want %s at rv 20 after the release at rv 10", v, KindStuckAfterRegistration)
				}
			}
		})
	}
}

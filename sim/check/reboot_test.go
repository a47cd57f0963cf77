package check

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// TestBoundBeforeReinit: after a reboot, a workload Pod bound before the node's init Pods
// are Ready again on the new boot is a violation; one bound before the reboot or after the
// re-initialisation, or one that tolerates the taint, is not.
func TestBoundBeforeReinit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := marksEvery(t0, time.Millisecond)
	released := func(reboot record.Reboot, bindings ...record.Binding) record.NodeRecord {
		return record.NodeRecord{Name: "n", Gated: true, TaintedAtCreate: true, Tainted: at(1), Created: at(1), InitReady: at(8), Released: at(10),
			Reboots: []record.Reboot{reboot}, Bindings: bindings}
	}
	workload := func(rv uint64) record.Binding { return record.Binding{Pod: "ns/w", Mark: at(rv)} }
	tests := []struct {
		name        string
		rec         record.NodeRecord
		wantBound   int
		wantLatency []time.Duration
	}{
		{name: "bound in the window", rec: released(record.Reboot{BootID: "b", Seen: at(20), Reinit: at(40)}, workload(30)), wantBound: 1},
		{name: "bound before the reboot", rec: released(record.Reboot{BootID: "b", Seen: at(20), Reinit: at(40)}, workload(15))},
		{name: "bound after the re-initialisation", rec: released(record.Reboot{BootID: "b", Seen: at(20), Regated: at(22), Reinit: at(40)}, workload(45)),
			wantLatency: []time.Duration{2 * time.Millisecond}},
		{name: "never re-initialised", rec: released(record.Reboot{BootID: "b", Seen: at(20)}, workload(100)), wantBound: 1},
		{name: "a tolerating Pod in the window", rec: released(record.Reboot{BootID: "b", Seen: at(20), Reinit: at(40)},
			record.Binding{Pod: "ns/agent", Mark: at(30), Tolerates: true})},
		{name: "an init Pod in the window", rec: released(record.Reboot{BootID: "b", Seen: at(20), Reinit: at(40)},
			record.Binding{Pod: "ns/init", Mark: at(30), Init: true})},
		{name: "not gated", rec: record.NodeRecord{Created: at(1), Reboots: []record.Reboot{{BootID: "b", Seen: at(20)}}, Bindings: []record.Binding{workload(30)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check([]record.NodeRecord{tt.rec}, t0, Bounds{})
			var kinds []string
			for _, vi := range v.Violations {
				kinds = append(kinds, vi.Kind)
			}
			if v.BoundBeforeReinit != tt.wantBound || len(v.Violations) != tt.wantBound {
				t.Errorf("%d bound before re-initialisation, violations %q; want %d %s", v.BoundBeforeReinit, kinds, tt.wantBound, KindBoundBeforeReinit)
			}
			for _, vi := range v.Violations {
				if vi.Kind != KindBoundBeforeReinit {
					t.Errorf("violation %s, want only %s", vi.Kind, KindBoundBeforeReinit)
				}
			}
			if len(v.RegateLatency) != len(tt.wantLatency) || (len(tt.wantLatency) > 0 && v.RegateLatency[0] != tt.wantLatency[0]) {
				t.Errorf("re-gate latency %v, want %v", v.RegateLatency, tt.wantLatency)
			}
		})
	}
}

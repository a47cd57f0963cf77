package sim

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/record"
)

// TestNodesSettled: a run has not settled while a rebooted node whose init Pods are Ready
// again on the new boot still carries the startup taint. CI ended rule-renamed-reboot the
// moment its last workload Pod bound on the nodes released first, and judged the two still
// being released held for good.
func TestNodesSettled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(rv uint64) record.Mark {
		return record.Mark{RV: rv, Time: t0.Add(time.Duration(rv) * time.Millisecond)}
	}
	const taint = "startup.k8s.io/initializing:NoSchedule"
	node := func(reinit record.Mark, taints ...string) record.NodeRecord {
		return record.NodeRecord{Name: "n", Gated: true, TaintedAtCreate: true, Created: at(1), Tainted: at(1), InitReady: at(8), Released: at(10),
			Reboots: []record.Reboot{{BootID: "b", Seen: at(20), Regated: at(22), Reinit: reinit}},
			Taints:  []record.Snapshot{{Mark: at(1), Facts: []string{taint}}, {Mark: at(10)}, {Mark: at(22), Facts: taints}}}
	}
	for name, tc := range map[string]struct {
		rec     record.NodeRecord
		gateOff bool
		want    bool
	}{
		"re-gated, warming up again":               {rec: node(record.Mark{}, taint), want: false},
		"rebooted, not re-gated, warming up again": {rec: func() record.NodeRecord { r := node(record.Mark{}); r.Reboots[0].Regated = record.Mark{}; return r }(), want: true},
		"ready again, the taint still on":          {rec: node(at(40), taint), want: false},
		"ready again and released":                 {rec: node(at(40)), want: true},
		"joined, never tainted, not yet serving":   {rec: record.NodeRecord{Name: "n", Gated: true, Created: at(1)}, want: false},
		"no gate: the init Pods not yet ready":     {rec: record.NodeRecord{Name: "n", Gated: true, Created: at(1)}, gateOff: true, want: false},
		"no gate: the init Pods ready":             {rec: record.NodeRecord{Name: "n", Gated: true, Created: at(1), InitReady: at(8)}, gateOff: true, want: true},
		"deleted, the taint still on after reboot": {rec: func() record.NodeRecord { r := node(at(40), taint); r.Deleted = at(50); return r }(), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			recs := []record.NodeRecord{tc.rec}
			v := check.Check(recs, t0, check.Bounds{StartupTaints: []string{taint}})
			if got := nodesSettled(recs, v, tc.gateOff); got != tc.want {
				t.Errorf("nodesSettled = %v, want %v (violations %v)", got, tc.want, v.Violations)
			}
		})
	}
}

// TestQuiet: with QuietFor set, a run is quiet once its node records have not changed for
// that long, and a change starts the wait again; without it, never.
func TestQuiet(t *testing.T) {
	recs := []record.NodeRecord{{Name: "n1", Tainted: record.Mark{RV: 3, Time: time.Now()}}}
	rn := &run{Runner: &Runner{Opts: Options{QuietFor: 20 * time.Millisecond}}}
	if rn.quiet(recs) {
		t.Fatal("quiet at the first look")
	}
	time.Sleep(30 * time.Millisecond)
	if !rn.quiet(recs) {
		t.Fatal("not quiet after QuietFor with nothing changed")
	}
	recs[0].Bindings = append(recs[0].Bindings, record.Binding{})
	if rn.quiet(recs) {
		t.Fatal("quiet right after a binding")
	}
	off := &run{Runner: &Runner{}}
	off.quiet(recs)
	time.Sleep(30 * time.Millisecond)
	if off.quiet(recs) {
		t.Fatal("quiet without QuietFor")
	}
}

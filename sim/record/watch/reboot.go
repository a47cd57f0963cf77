package watch

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/sim/record"
)

// reboots notes a boot ID the node reports for the first time, after the one it joined
// with: a reboot. Until a gating rule's taint is back, it notes the first version with it.
func (r *Recorder) reboots(rec *nodeState, cur *corev1.Node, m record.Mark) {
	if id := cur.Status.NodeInfo.BootID; id != "" && id != rec.boot {
		if rec.boot != "" {
			rec.Reboots = append(rec.Reboots, record.Reboot{BootID: id, Seen: m})
		}
		rec.boot = id
	}
	if n := len(rec.Reboots); n > 0 && rec.Reboots[n-1].Regated.IsZero() && m.RV > rec.Reboots[n-1].Seen.RV && r.config().HasTaint(cur) {
		rec.Reboots[n-1].Regated = m
	}
}

// initState keeps the init Pod's readiness and restart count as of this write, when they
// changed.
func (seen *podSeen) initState(p *corev1.Pod, m record.Mark) {
	var restarts int32
	for _, c := range p.Status.ContainerStatuses {
		restarts = max(restarts, c.RestartCount)
	}
	st := record.InitState{Mark: m, Ready: seen.ready, Restarts: restarts}
	if n := len(seen.states); n > 0 && seen.states[n-1].Ready == st.Ready && seen.states[n-1].Restarts == st.Restarts {
		return
	}
	seen.states = append(seen.states, st)
}

// reinit is when every component of the node had a Pod Ready again after the reboot seen
// at seen: the latest of each component's first such Pod (zero: some component has none yet).
func reinit(rec *nodeState, seen record.Mark) record.Mark {
	var last record.Mark
	for _, comp := range rec.Components {
		var first record.Mark
		for _, p := range rec.inits {
			if p.component != comp {
				continue
			}
			if m := record.ReadyAgain(p.states, seen); !m.IsZero() && (first.IsZero() || m.RV < first.RV) {
				first = m
			}
		}
		if first.IsZero() {
			return record.Mark{}
		}
		if first.RV > last.RV {
			last = first
		}
	}
	return last
}

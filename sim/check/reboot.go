package check

import (
	"fmt"
	"slices"

	"github.com/startupgate/startupgate/sim/record"
)

// heldAfterReinit: the node's init Pods were Ready again after its last reboot, on
// containers the reboot restarted, and a startup rule's taint is still on at the end. The
// warm-up the re-gate waited for has run: nothing is left to wait for.
func heldAfterReinit(rec *record.NodeRecord, startupTaints []string, ms func(record.Mark) int64) []Violation {
	n := len(rec.Reboots)
	if n == 0 || rec.Reboots[n-1].Reinit.IsZero() || !rec.Deleted.IsZero() || len(rec.Taints) == 0 {
		return nil
	}
	rb, last := rec.Reboots[n-1], rec.Taints[len(rec.Taints)-1]
	var out []Violation
	for _, t := range startupTaints {
		if slices.Contains(last.Facts, t) {
			out = append(out, Violation{Kind: KindHeldAfterReinit, Node: rec.Name, AtMS: ms(rb.Reinit), RV: rb.Reinit.RV,
				Detail: fmt.Sprintf("boot %s reported at rv %d, init Pods Ready again at rv %d, and %s still on at the end", rb.BootID, rb.Seen.RV, rb.Reinit.RV, t)})
		}
	}
	return out
}

// rebootViolations judges a gated node's reboots: no workload Pod may be bound between the
// new boot ID's first sighting and the node's re-initialisation (its init Pods Ready again
// on the new boot; never, if they are not yet), ordered by resourceVersion. A reboot keeps
// the Node, so the scheduler sees a Ready node whose warm-up has to run again. It adds the
// re-gate latencies and the Pods bound to v.
func rebootViolations(rec *record.NodeRecord, startupTaints []string, v *Verdict, ms func(record.Mark) int64) []Violation {
	out := heldAfterReinit(rec, startupTaints, ms)
	for _, rb := range rec.Reboots {
		v.Reboots++
		if !rb.Regated.IsZero() {
			v.RegateLatency = append(v.RegateLatency, rb.Regated.Time.Sub(rb.Seen.Time))
		}
		for _, bd := range rec.Bindings {
			if !bd.Workload() || bd.Mark.RV <= rb.Seen.RV || (!rb.Reinit.IsZero() && bd.Mark.RV >= rb.Reinit.RV) {
				continue
			}
			v.BoundBeforeReinit++
			detail := fmt.Sprintf("bound at rv %d, boot %s reported at rv %d, init Pods not Ready again", bd.Mark.RV, rb.BootID, rb.Seen.RV)
			if !rb.Reinit.IsZero() {
				detail = fmt.Sprintf("bound at rv %d, boot %s reported at rv %d, init Pods Ready again at rv %d", bd.Mark.RV, rb.BootID, rb.Seen.RV, rb.Reinit.RV)
			}
			out = append(out, Violation{Kind: KindBoundBeforeReinit, Node: rec.Name, Pod: bd.Pod, AtMS: ms(bd.Mark), RV: bd.Mark.RV, Detail: detail})
		}
	}
	return out
}

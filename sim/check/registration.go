package check

import (
	"fmt"
	"slices"

	"github.com/startupgate/startupgate/sim/record"
)

// KindStuckAfterRegistration is a node the gate released that carries a startup rule's
// taint when the run ends, with no reboot to explain it. Karpenter writes its NodePool's
// startupTaints when it registers a node; one registered after its release gets the gate's
// taint back, and a startup rule that never looks at a released node leaves it there.
const KindStuckAfterRegistration = "stuck-after-registration"

// stuckAfterRegistration judges a released node's last taints against the startup rules'
// (key:Effect), unless its last reboot re-gated it (its taint then is the rule's own).
func stuckAfterRegistration(rec *record.NodeRecord, startupTaints []string, ms func(record.Mark) int64) []Violation {
	if rec.Released.IsZero() || !rec.Deleted.IsZero() || len(rec.Taints) == 0 {
		return nil
	}
	if n := len(rec.Reboots); n > 0 && !rec.Reboots[n-1].Regated.IsZero() {
		return nil
	}
	last := rec.Taints[len(rec.Taints)-1]
	if last.Mark.RV <= rec.Released.RV {
		return nil // the release's own version or before: the release took it off
	}
	var out []Violation
	for _, t := range startupTaints {
		if slices.Contains(last.Facts, t) {
			out = append(out, Violation{Kind: KindStuckAfterRegistration, Node: rec.Name, AtMS: ms(last.Mark), RV: last.Mark.RV,
				ReleasedMS: ms(rec.Released), ReleasedRV: rec.Released.RV,
				Detail: fmt.Sprintf("released at rv %d, carries %s again since rv %d, and still at the end", rec.Released.RV, t, last.Mark.RV)})
		}
	}
	return out
}

package check

import (
	"fmt"
	"slices"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// KindNodeClaimsRedundant is the autoscaler creating more NodeClaims than the scenario's
// arithmetic needs. A gating taint that the autoscaler takes for permanent makes every
// pending Pod look unplaceable on the held node, and the autoscaler launches again.
const KindNodeClaimsRedundant = "nodeclaims-redundant"

// NodeClaim is one NodeClaim the autoscaler created: its name and when the run saw it.
type NodeClaim struct {
	Name    string
	Created time.Time
}

// NodeClaims judges the NodeClaims created during a run against want, the most the
// scenario needs (0: not judged): each one past want is a violation, named, at the time
// it was created. claims are in order of creation.
func NodeClaims(claims []NodeClaim, want int, start time.Time) []Violation {
	if want <= 0 || len(claims) <= want {
		return nil
	}
	var out []Violation
	for i, c := range claims[want:] {
		out = append(out, Violation{Kind: KindNodeClaimsRedundant, Node: c.Name, AtMS: c.Created.Sub(start).Milliseconds(),
			Detail: fmt.Sprintf("NodeClaim %d of %d created; the scenario needs %d", want+i+1, len(claims), want)})
	}
	return out
}

// KindDisruptedWhileHeld is a gated node deleted before the gate released it, in a run
// where only the autoscaler deletes nodes: Karpenter counts a node whose startup taints
// are still on as not yet initialized and never disrupts it, unless it takes the gate's
// taint for a permanent one and the held node, which runs nothing, for an empty one.
const KindDisruptedWhileHeld = "disrupted-while-held"

// DisruptedWhileHeld judges the autoscaler's deletions: each gated node deleted while it
// was still held (never released, and a startup rule's taint, startupTaints as key:Effect,
// on it in the last version seen) is a violation, unless the gate had marked it for
// replacement (its own request, which Replacements judges). A node whose taint the gate
// lifted without a release (its rule no longer selects it) is no longer held.
func DisruptedWhileHeld(records []record.NodeRecord, start time.Time, startupTaints []string) []Violation {
	var out []Violation
	for i := range records {
		rec := &records[i]
		if !rec.Gated || rec.Deleted.IsZero() || rec.Tainted.IsZero() || !rec.Released.IsZero() || !rec.Replacing.IsZero() {
			continue
		}
		if n := len(rec.Taints); n > 0 && !slices.ContainsFunc(startupTaints, func(t string) bool { return slices.Contains(rec.Taints[n-1].Facts, t) }) {
			continue
		}
		out = append(out, Violation{Kind: KindDisruptedWhileHeld, Node: rec.Name, AtMS: rec.Deleted.Time.Sub(start).Milliseconds(), RV: rec.Deleted.RV,
			Detail: fmt.Sprintf("deleted at rv %d, held since rv %d and never released", rec.Deleted.RV, rec.Tainted.RV)})
	}
	return out
}

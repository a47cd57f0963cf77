package check

import (
	"fmt"
	"time"
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

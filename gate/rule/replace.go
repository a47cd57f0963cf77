package rule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A startup rule with timeoutPolicy: replace hands a node whose warm-up never finishes back
// to its autoscaler: at maxHold the gate deletes the node's NodeClaim, and Karpenter drains
// the node, terminates it and launches another for the Pods still pending. Two records
// keep it safe across restarts, both written before the delete:
//   - <completion>_replaced on the Node: "<unix second>", when the gate began to replace
//     it. It makes the node StateReplacing (held until Karpenter removes it) and counts it
//     as a replacement in flight; a gate restarted before its delete deletes the same
//     NodeClaim (by UID), never another.
//   - <completion>_timeouts on the NodePool: "<count>@<unix second>", how many of the
//     pool's nodes in a row timed out under the rule with none warming in between, and when
//     the last did: the storm guard. A node of the pool that the rule releases after that
//     moment starts the count again; an operator does the same by removing the annotation.
const (
	replacedSuffix = "_replaced"
	timeoutsSuffix = "_timeouts"
)

// Karpenter's names: the label that names a node's NodePool, and the owner kind that names
// its NodeClaim.
const (
	KarpenterNodePoolLabel = "karpenter.sh/nodepool"
	KarpenterAPIVersion    = "karpenter.sh/v1"
	KarpenterNodeClaimKind = "NodeClaim"
)

// Defaults of a replace rule's budget and guard.
const (
	DefaultMaxReplacing     = 1
	DefaultReplaceStopAfter = 3
	DefaultReplaceBackoff   = 1 * time.Minute
	// maxBackoffDoublings caps the guard's backoff at 16 times replaceBackoff.
	maxBackoffDoublings = 4
)

// ReplacedAnnotation is the Node annotation that marks a node the rule is replacing.
func (r *Rule) ReplacedAnnotation() string { return r.CompletedAnnotation + replacedSuffix }

// TimeoutsAnnotation is the NodePool annotation of the rule's storm guard.
func (r *Rule) TimeoutsAnnotation() string { return r.CompletedAnnotation + timeoutsSuffix }

// Replacing reports whether the rule has begun to replace the node.
func (r *Rule) Replacing(n *corev1.Node) bool {
	_, ok := n.Annotations[r.ReplacedAnnotation()]
	return ok
}

// NodeClaimOf names the NodeClaim that owns the node, with its UID: Karpenter sets that
// owner when it registers the node. ok is false for a node no NodeClaim owns.
func NodeClaimOf(n *corev1.Node) (name, uid string, ok bool) {
	for _, o := range n.OwnerReferences {
		if o.Kind == KarpenterNodeClaimKind && strings.HasPrefix(o.APIVersion, "karpenter.sh/") {
			return o.Name, string(o.UID), true
		}
	}
	return "", "", false
}

// Guard is a NodePool's record of the rule's timeouts: how many of its nodes in a row timed
// out with none warming in between, and when the last one did.
type Guard struct {
	Timeouts int
	Last     time.Time
}

// ParseGuard reads a guard annotation's value ("" is no timeout). A value it cannot read
// is an error: the caller keeps the nodes held rather than guess.
func ParseGuard(v string) (Guard, error) {
	if v == "" {
		return Guard{}, nil
	}
	n, at, ok := strings.Cut(v, "@")
	count, err1 := strconv.Atoi(n)
	unix, err2 := strconv.ParseInt(at, 10, 64)
	if !ok || err1 != nil || err2 != nil || count < 0 {
		return Guard{}, fmt.Errorf("%q: want <count>@<unix seconds>", v)
	}
	return Guard{Timeouts: count, Last: time.Unix(unix, 0)}, nil
}

// String is the guard as its annotation holds it.
func (g Guard) String() string { return strconv.Itoa(g.Timeouts) + "@" + formatUnix(g.Last) }

// ReplaceView is what a replacement reads beyond the node's own state: its NodeClaim and
// NodePool, the rule's replacements in flight, and the pool's guard.
type ReplaceView struct {
	// Claim names the node's NodeClaim ("": none owns it, so nothing can replace it).
	Claim string
	// Pool names the node's NodePool (its karpenter.sh/nodepool label).
	Pool string
	// InFlight counts the nodes the rule is replacing now (Replacing), this one excepted.
	InFlight int
	// Guard is the pool's record, as read; GuardErr, if set, is why it could not be read.
	Guard    Guard
	GuardErr error
	// WarmedSince: a node of the pool that the rule released after Guard.Last.
	WarmedSince bool
}

// ViewOf is the ReplaceView of node under the rule, read from what the caller sees: nodes
// (the node among them or not; its replacements in flight are those marked and still
// held, plus the names in marked, which the caller knows it marked), and the pool's guard
// annotation as read (guardErr: why it could not be). It is pure.
func (r *Rule) ViewOf(node *corev1.Node, nodes []*corev1.Node, marked map[string]bool, guard string, guardErr error) ReplaceView {
	v := ReplaceView{Pool: node.Labels[KarpenterNodePoolLabel]}
	v.Claim, _, _ = NodeClaimOf(node)
	if v.Claim == "" || v.Pool == "" {
		return v
	}
	if v.GuardErr = guardErr; guardErr == nil {
		v.Guard, v.GuardErr = ParseGuard(guard)
	}
	inFlight := map[string]bool{}
	for name := range marked {
		inFlight[name] = true
	}
	for _, n := range nodes {
		if n.Name == node.Name {
			continue
		}
		if r.HasTaint(n) && r.Replacing(n) {
			inFlight[n.Name] = true
		}
		if n.Labels[KarpenterNodePoolLabel] == v.Pool && r.completedAfter(n, v.Guard.Last) {
			v.WarmedSince = true
		}
	}
	delete(inFlight, node.Name)
	v.InFlight = len(inFlight)
	return v
}

// completedAfter reports whether the rule released the node after t (its completion
// annotation holds unix seconds) on its requirements: a node released unwarmed (by hand, a
// backfill undone, an adoption, a timeout) says nothing of whether the pool's nodes warm.
func (r *Rule) completedAfter(n *corev1.Node, t time.Time) bool {
	s, err := strconv.ParseInt(n.Annotations[r.CompletedAnnotation], 10, 64)
	_, unwarmed := n.Annotations[r.CompletedAnnotation+unwarmedSuffix]
	return err == nil && !unwarmed && time.Unix(s, 0).After(t)
}

// ReplaceAction is what a timed-out node of a replace rule gets.
type ReplaceAction string

// The replace actions.
const (
	// ReplaceNow: record the guard, mark the node, delete its NodeClaim.
	ReplaceNow ReplaceAction = "replace"
	// ReplaceDelete: the node is marked already (a delete that failed, or a gate that
	// stopped between the mark and the delete): delete its NodeClaim again, by UID.
	ReplaceDelete ReplaceAction = "delete"
	// ReplaceWait: the budget is spent, or the pool backs off: decide again later.
	ReplaceWait ReplaceAction = "wait"
	// ReplaceStopped: the pool's guard has stopped replacements: the node stays held.
	ReplaceStopped ReplaceAction = "stopped"
	// ReplaceKeep: the node cannot be replaced (no NodeClaim, no NodePool, a guard that
	// cannot be read): the node stays held, as timeoutPolicy keep holds it.
	ReplaceKeep ReplaceAction = "keep"
)

// Replacement is a replace decision: the action, the guard to record first (ReplaceNow),
// when to decide again (ReplaceWait, ReplaceStopped, ReplaceKeep on a guard it cannot
// read), and why in words.
type Replacement struct {
	Action ReplaceAction
	Guard  Guard
	After  time.Duration
	Reason string
}

// DecideReplace decides about a node the rule holds whose maximum hold has passed (Decide
// set Replace), under the rule's budget (maxReplacing in flight) and the pool's guard
// (replaceStopAfter timeouts in a row, replaceBackoff between them, doubling). It is pure.
// A node marked already is deleted again whatever the budget: it is counted in it.
func (r *Rule) DecideReplace(d Decision, v ReplaceView, now time.Time) Replacement {
	switch {
	case d.State == StateReplacing:
		return Replacement{Action: ReplaceDelete, Reason: "replacing: its NodeClaim is deleted"}
	case v.Claim == "":
		return Replacement{Action: ReplaceKeep, Reason: "no NodeClaim owns the node (timeoutPolicy replace needs Karpenter): kept held"}
	case v.Pool == "":
		return Replacement{Action: ReplaceKeep, Reason: fmt.Sprintf("the node has no %s label: kept held", KarpenterNodePoolLabel)}
	case v.GuardErr != nil:
		// An operator can mend the annotation or the pool, which is no event of the node.
		return Replacement{Action: ReplaceKeep, After: r.ReplaceBackoff.Duration,
			Reason: fmt.Sprintf("NodePool %s's %s: %v: kept held", v.Pool, r.TimeoutsAnnotation(), v.GuardErr)}
	}
	g := v.Guard
	if v.WarmedSince {
		g = Guard{}
	}
	backoff := r.ReplaceBackoff.Duration
	switch {
	case g.Timeouts >= r.ReplaceStopAfter:
		return Replacement{Action: ReplaceStopped, After: backoff, Reason: fmt.Sprintf(
			"%d nodes of NodePool %s timed out in a row with none warming: replacements stopped there (a node of the pool warming, or removing its annotation %s, resumes them)",
			g.Timeouts, v.Pool, r.TimeoutsAnnotation())}
	case v.InFlight >= r.MaxReplacing:
		return Replacement{Action: ReplaceWait, After: backoff, Reason: fmt.Sprintf("%d of %d replacements in flight: waiting for one to finish", v.InFlight, r.MaxReplacing)}
	}
	if g.Timeouts > 0 {
		wait := backoff << min(g.Timeouts-1, maxBackoffDoublings)
		if left := g.Last.Add(wait).Sub(now); left > 0 {
			return Replacement{Action: ReplaceWait, After: left, Reason: fmt.Sprintf(
				"NodePool %s backs off: %d timed out in a row, the last at %s; replacing in %s", v.Pool, g.Timeouts, g.Last.UTC().Format(time.RFC3339), left.Round(time.Second))}
		}
	}
	return Replacement{Action: ReplaceNow, Guard: Guard{Timeouts: g.Timeouts + 1, Last: now},
		Reason: fmt.Sprintf("deleting NodeClaim %s: Karpenter drains the node and launches another", v.Claim)}
}

// markReplaced marks the node as one the rule is replacing, on a node the rule still holds
// (its first hold, or a re-gate): on a fresh copy after a conflict, one released meanwhile
// is not replaced.
func (r *Rule) markReplaced(n *corev1.Node, now time.Time) bool {
	if !r.HasTaint(n) || r.Completed(n) && !r.regateMarked(n) {
		return false
	}
	if !r.Replacing(n) {
		setAnnotation(n, r.ReplacedAnnotation(), formatUnix(now))
	}
	return true
}

// validateReplace checks the replace policy and its budget: only a startup rule with a
// maximum hold replaces (a continuous rule's node is in service, and without maxHold no
// node ever times out); the budget's fields mean nothing under another policy.
func (r *Rule) validateReplace(field func(string) string, errs *Errors) {
	if r.TimeoutPolicy != TimeoutReplace {
		if r.MaxReplacing != 0 || r.ReplaceStopAfter != 0 || r.ReplaceBackoff.Duration != 0 {
			errs.Add(field("timeoutPolicy"), "%q: maxReplacing, replaceStopAfter and replaceBackoff need timeoutPolicy %q", r.TimeoutPolicy, TimeoutReplace)
		}
		return
	}
	if r.Mode != Startup {
		errs.Add(field("timeoutPolicy"), "%q: only a startup rule replaces a node; a %s rule's nodes are in service", r.TimeoutPolicy, r.Mode)
	}
	if r.MaxHold.Duration <= 0 {
		errs.Add(field("timeoutPolicy"), "%q: needs maxHold, after which a node that has not warmed is replaced", r.TimeoutPolicy)
	}
	if r.MaxReplacing == 0 {
		r.MaxReplacing = DefaultMaxReplacing
	}
	if r.ReplaceStopAfter == 0 {
		r.ReplaceStopAfter = DefaultReplaceStopAfter
	}
	if r.ReplaceBackoff.Duration == 0 {
		r.ReplaceBackoff.Duration = DefaultReplaceBackoff
	}
	if r.MaxReplacing < 0 {
		errs.Add(field("maxReplacing"), "%d: must be positive", r.MaxReplacing)
	}
	if r.ReplaceStopAfter < 0 {
		errs.Add(field("replaceStopAfter"), "%d: must be positive", r.ReplaceStopAfter)
	}
	if r.ReplaceBackoff.Duration < 0 {
		errs.Add(field("replaceBackoff"), "%s: must not be negative", r.ReplaceBackoff.Duration)
	}
}

package rule

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// State is where a node stands under one rule. StateOf names it from the node, its Pods
// and the rule alone, and everything that reads a node's standing reads it there: Decide
// (and so the controller, which dispatches on it), the Pod guard, `gate status`, the
// metrics, and the simulator's invariants. Some states last (held, released); others ask
// for one write, after which the node is in a lasting state (rebooted: the re-gate).
type State string

// The states of a startup or continuous rule; a condition rule's node is StateCondition
// (DecideCondition reads it further).
const (
	// StateSuspended: the rule is suspended. It writes nothing; its taint, if on, stays.
	StateSuspended State = "suspended"
	// StateDryRun: the rule reports what it would do and writes nothing.
	StateDryRun State = "dry-run"
	// StateCondition: a condition rule (DecideCondition).
	StateCondition State = "condition"
	// StateOutside: the rule does not select the node and placed no taint on it.
	StateOutside State = "outside"
	// StateLeft: the rule placed its taint on the node and no longer selects it (its labels
	// or the rule's selector changed): the taint comes off.
	StateLeft State = "left-selector"
	// StateUntainted: the rule selects the node and has not released it, its taint is not
	// on (the node came up without it), and the gate has neither released nor held it:
	// backfill's to decide.
	StateUntainted State = "untainted"
	// StateJoining: the rule selects the node and has no record of it, its taint is not on,
	// the node is not in service, and another taint the gate placed holds it (this rule was
	// added, enforced, resumed, given a new taint or began to select the node after its
	// creation): the rule puts its taint on too (one write), and holds the node like one it
	// tainted at creation.
	StateJoining State = "joining"
	// StateAdopting: the rule selects the node and has no record of it, its taint is not on,
	// and the gate released the node under another taint's record (the rule was added,
	// enforced, resumed or given a new taint after the release): the node is in service.
	// The rule records it as released (one write; a continuous rule once its requirements
	// hold), with the boot and readiness the other record holds, so that it gates the node's
	// reboots and a continuous rule watches it.
	StateAdopting State = "adopting"
	// StateHeld: the rule's taint is on and the rule has not released the node yet.
	StateHeld State = "held"
	// StateReplacing: held, its maximum hold passed under timeoutPolicy replace, and the
	// gate has deleted (or is deleting) the node's NodeClaim: the rule holds the node until
	// Karpenter removes it.
	StateReplacing State = "replacing"
	// StateHeldRebooted: held, and the node booted again since the rule recorded readiness
	// on it: what was Ready then is recorded as not counting (one write).
	StateHeldRebooted State = "held-rebooted"
	// StateReleased: the rule released the node and has nothing to do.
	StateReleased State = "released"
	// StateRetainted: a continuous rule's taint is back on.
	StateRetainted State = "re-tainted"
	// StateReturned: the autoscaler put the rule's taint back when it registered the node
	// after the release; the rule takes it off again once its requirements hold.
	StateReturned State = "returned"
	// StateForeign: a released startup rule's taint is on again, put there by someone else
	// (an operator): not the rule's to lift.
	StateForeign State = "foreign"
	// StateBootUnrecorded: the rule gates reboots and has no boot, or no readiness, recorded
	// for the node (it released the node before it gated reboots, or before it recorded
	// evidence): the boot and its readiness are recorded.
	StateBootUnrecorded State = "boot-unrecorded"
	// StateRestarted: the released node's init Pods run new containers on the same boot: the
	// new readiness is recorded, so that a later reboot is not mistaken for it.
	StateRestarted State = "restarted"
	// StateRebooted: the released node runs a new boot whose warm-up has not shown fresh
	// readiness: the taint goes back (the re-gate).
	StateRebooted State = "rebooted"
	// StateRebootedReady: the released node runs a new boot, and every component is already
	// Ready on containers the record does not hold: the warm-up ran again while the gate
	// was not looking. The boot and the readiness are recorded; no taint.
	StateRebootedReady State = "rebooted-ready"
	// StateRegated: the rule holds the rebooted node until fresh readiness.
	StateRegated State = "regated"
	// StateRebootedAgain: re-gated, the node booted again: the re-gate now waits for the new
	// boot, and readiness Ready when the gate saw it may be the old boot's, so it does not
	// count (one write).
	StateRebootedAgain State = "rebooted-again"
	// StateRegateDropped: re-gated, and the rule no longer gates reboots: the taint comes off.
	StateRegateDropped State = "regate-dropped"
	// StateRegateRemoved: re-gated, and the taint was removed by hand: the current boot is
	// recorded as released.
	StateRegateRemoved State = "regate-removed"
)

// Holds reports whether a rule in this state holds the node: its taint is on, or must come
// back, and it stays until the rule's requirements hold. A binding to such a node (which
// does not tolerate the taint) is early.
func (s State) Holds() bool { return rows[s].Holds }

// StateOf names the node's state under the rule, with why in words (for `gate status` and
// events). It is pure. A suspended rule's node is StateSuspended whatever else holds: its
// rule does nothing until resumed.
func StateOf(r *Rule, rd Readiness, in Input) (State, string) {
	st, why, _ := r.classify(rd, in)
	return st, why
}

// evidence is what classify read about the node's readiness, for the decision that follows.
type evidence struct {
	boot Boot
	// record is the recorded evidence (nil: none recorded); past adds to it what the gate's
	// other records hold of the same boot (pastReadiness).
	record, past map[string]bool
	// prints are the fingerprints of the counted Pods ready now.
	prints []string
}

// classify is StateOf, with the evidence it read.
func (r *Rule) classify(rd Readiness, in Input) (State, string, evidence) {
	n := in.Node
	ev := evidence{boot: r.BootOf(n)}
	if r.GatesReboots() {
		ev.record, ev.prints = r.Evidence(n), r.readyPrints(rd, in)
		ev.past = r.pastReadiness(n, ev.record)
	}
	switch {
	case r.Suspend:
		return StateSuspended, "the rule is suspended: it writes nothing until resumed", ev
	case r.Mode == Condition:
		return StateCondition, "", ev
	case r.DryRun:
		return StateDryRun, "dry run: the rule writes nothing", ev
	case !r.Matches(n) && r.HasTaint(n) && r.Placed(n):
		return StateLeft, fmt.Sprintf("the node left the rule's selector %q: its taint comes off", r.NodeSelector), ev
	case !r.Matches(n):
		return StateOutside, "the rule does not select the node", ev
	case r.HasTaint(n) && r.Replacing(n):
		return StateReplacing, "replacing: its NodeClaim is deleted, and Karpenter removes the node", ev
	case !r.Completed(n):
		return r.classifyFirst(n, ev)
	case r.HasTaint(n):
		return r.classifyTainted(n, ev)
	}
	return r.classifyReleased(rd, in, ev)
}

// classifyFirst: a node the rule has not released yet.
func (r *Rule) classifyFirst(n *corev1.Node, ev evidence) (State, string, evidence) {
	switch {
	case !r.HasTaint(n) && r.inService(n):
		return StateAdopting, "the gate released the node under another taint: the rule records it as released", ev
	case !r.HasTaint(n) && r.heldByPeer(n):
		return StateJoining, "another of the gate's taints holds the node, which came up without this rule's: it goes on too", ev
	case !r.HasTaint(n):
		return StateUntainted, "came up without the rule's taint (backfill's, if on)", ev
	case r.GatesReboots() && ev.boot.Rebooted():
		return StateHeldRebooted, fmt.Sprintf("booted again (boot %s) since readiness was seen on boot %s", ev.boot.Current, ev.boot.Recorded), ev
	}
	return StateHeld, "", ev
}

// classifyTainted: a released node that carries the rule's taint again.
func (r *Rule) classifyTainted(n *corev1.Node, ev evidence) (State, string, evidence) {
	b := ev.boot
	if _, marked := n.Annotations[r.RegatedAnnotation()]; marked {
		switch {
		case !r.GatesReboots():
			return StateRegateDropped, "re-gated, and the rule no longer gates reboots: its taint comes off", ev
		case b.RebootedAgain():
			return StateRebootedAgain, fmt.Sprintf("re-gated for boot %s, the node booted again (boot %s)", b.Awaited, b.Current), ev
		}
		return StateRegated, fmt.Sprintf("re-gated after the reboot to boot %s", b.Current), ev
	}
	switch {
	case r.Mode == Continuous:
		return StateRetainted, "", ev
	case r.Placed(n) && !(r.GatesReboots() && b.Rebooted()):
		// Marked as this rule's, on a released node, with no re-gate: the rule put it back
		// while it was a continuous rule. A startup rule now, it takes it off once the
		// requirements hold, as it does a taint the autoscaler put back.
		return StateReturned, "the rule put its taint back when it was a continuous rule", ev
	case !AwaitingStartupTaints(n):
		return StateForeign, "the rule released the node; its taint was put back by someone else, whose it is to remove", ev
	case r.GatesReboots() && b.Rebooted():
		return StateRebooted, fmt.Sprintf("the autoscaler put the taint back at registration, and the node rebooted since the release (boot %s, released on boot %s)", b.Current, b.Recorded), ev
	}
	return StateReturned, "the autoscaler put the taint back when it registered the node, after the release", ev
}

// classifyReleased: a node the rule released, its taint off.
func (r *Rule) classifyReleased(rd Readiness, in Input, ev evidence) (State, string, evidence) {
	n, b := in.Node, ev.boot
	_, marked := n.Annotations[r.RegatedAnnotation()]
	switch {
	case !r.GatesReboots():
		return StateReleased, "released", ev
	case marked:
		return StateRegateRemoved, "the re-gate's taint was removed by hand: recording the current boot", ev
	case b.Current == "":
		return StateReleased, "released (the kubelet reports no boot ID)", ev
	case b.Recorded == "" || ev.record == nil && !b.Rebooted():
		return StateBootUnrecorded, "recording the boot the node was released on, and its readiness", ev
	case b.Rebooted() && ev.record != nil && r.freshlyReady(rd, in, ev.past):
		return StateRebootedReady, fmt.Sprintf("rebooted (boot %s, released on boot %s) and already ready again on new containers", b.Current, b.Recorded), ev
	case b.Rebooted():
		return StateRebooted, fmt.Sprintf("rebooted: boot %s, released on boot %s", b.Current, b.Recorded), ev
	case ev.record != nil && unrecorded(ev.prints, ev.record):
		return StateRestarted, "init containers restarted on the same boot: recording their readiness", ev
	}
	return StateReleased, "released", ev
}

// freshlyReady reports whether the rule's requirements hold on readiness the record does
// not hold.
func (r *Rule) freshlyReady(rd Readiness, in Input, record map[string]bool) bool {
	in.Stale = record
	met, _, _, _ := r.requirements(rd, in)
	return met
}

// heldByPeer reports whether the node carries another taint that holds it from creation: one
// of the gate's other rules', or one the gate placed that no rule owns any more (an orphan in
// its grace period, as after a rule's taint changed): it is held, not in service.
func (r *Rule) heldByPeer(n *corev1.Node) bool {
	return slices.ContainsFunc(r.PeerTaints, func(t corev1.Taint) bool { return carries(n, t) }) || r.heldByMark(n)
}

// heldByMark reports whether the node carries a taint that a mark of this gate says it
// placed and that is no rule's (GateTaints).
func (r *Rule) heldByMark(n *corev1.Node) bool {
	prefix := r.placedPrefix()
	for k, v := range n.Annotations {
		t, instance, ok := ParsePlaced(v)
		if ok && strings.HasPrefix(k, prefix) && instance == r.Instance && carries(n, t) && !sameTaint(r.Taint, t) &&
			!slices.ContainsFunc(r.GateTaints, func(g corev1.Taint) bool { return sameTaint(g, t) }) {
			return true
		}
	}
	return false
}

// sameTaint reports whether two taints are one: the same key and effect.
func sameTaint(a, b corev1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect }

// inService reports whether the gate released the node under some rule (InService).
func (r *Rule) inService(n *corev1.Node) bool { return InService(n, r.ReleasedAnnotation) }

// InService reports whether the node carries the completion annotation base, or base with
// ".<record>": the gate, whose rules derive theirs from base, released it under some taint.
func InService(n *corev1.Node, base string) bool {
	for k := range n.Annotations {
		if completionOf(k, base) {
			return true
		}
	}
	return false
}

// completionOf reports whether key is a completion annotation derived from base: base
// itself, or base with ".<record>". A record's name has no "_", with which the boot and
// readiness records' suffixes start.
func completionOf(key, base string) bool {
	name, ok := strings.CutPrefix(key, base)
	return base != "" && ok && (name == "" || name[0] == '.' && !strings.Contains(name, "_"))
}

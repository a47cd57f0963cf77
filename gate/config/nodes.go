package config

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// Admit is the mutation of a Node at CREATE, shared by the webhook and backfill: the taint
// of every admitting rule (Admitting) that applies to the node and has not released it. It
// returns the rules that apply, and which of them it tainted.
func (c *Config) Admit(n *corev1.Node) (applies, tainted []*rule.Rule) {
	for _, r := range c.Admitting() {
		if !r.Matches(n) || r.Completed(n) {
			continue
		}
		applies = append(applies, r)
		if r.AddTaint(n) {
			tainted = append(tainted, r)
		}
	}
	return applies, tainted
}

// HoldingTaint is the first taint on the node, of a rule that writes and holds the node in
// its state (rule.State.Holds, or suspended while it selects the node), that the
// tolerations do not tolerate. It is judged against the taint the node really carries:
// kubelet or Karpenter may have registered it with another value, and the scheduler
// compares with that one. A rule's taint on a node it does not hold (released, left
// behind by a departure from its selector, put back by someone else) is not the gate's
// hold. An orphan the gate has not lifted yet (Orphans: a taint no rule has any more, in its
// grace period) holds the node too: a rule given a new taint joins that hold, or admission's
// taints go on in the lift's write.
func (c *Config) HoldingTaint(node *corev1.Node, tolerations []corev1.Toleration) (corev1.Taint, bool) {
	for _, r := range c.Gating() {
		if !c.Holds(r, node) {
			continue
		}
		if t, ok := untolerated(node, r.Taint, tolerations); ok {
			return t, true
		}
	}
	for _, o := range c.Orphans(node) {
		if t, ok := untolerated(node, o.Taint, tolerations); ok {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

// untolerated is the node's taint of want's key and effect, as the node carries it, when
// the tolerations do not tolerate it.
func untolerated(node *corev1.Node, want corev1.Taint, tolerations []corev1.Toleration) (corev1.Taint, bool) {
	for _, t := range node.Spec.Taints {
		if t.Key == want.Key && t.Effect == want.Effect && !rule.Tolerated(tolerations, &t) {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

// Holds reports whether rule r holds the node with its taint: the taint is on and the
// rule's state holds the node, or the rule is suspended and selects it. The states of a
// tainted node do not depend on its Pods, so the node alone is read.
func (c *Config) Holds(r *rule.Rule, node *corev1.Node) bool {
	if !r.HasTaint(node) {
		return false
	}
	st, _ := rule.StateOf(r, c.Readiness(), rule.Input{Node: node})
	return st.Holds() || st == rule.StateSuspended && r.Matches(node)
}

// ComponentOf names the rule and the required component whose Pods this DaemonSet
// creates, or nil and "".
func (c *Config) ComponentOf(ds *appsv1.DaemonSet) (*rule.Rule, string) {
	for _, r := range c.EffectiveRules() {
		if comp := r.ComponentOf(ds); comp != "" {
			return r, comp
		}
	}
	return nil, ""
}

// TaintList names the taints of the rules that write, for a message. A component's Pods
// must tolerate every one of them: at creation a node may carry them all, and a component
// that waits for another rule's release while that rule waits for it never starts.
func (c *Config) TaintList() string {
	var out []string
	for _, r := range c.Gating() {
		out = append(out, r.Taint.ToString())
	}
	return strings.Join(out, ", ")
}

// RebootExposed reports whether a reboot of the node would open a window for a Pod with
// these tolerations between the kubelet's new boot ID, which a quick reboot may report
// without the node ever turning NotReady, and the re-gate write: a rule that gates reboots,
// runs (not suspended), selects the node and has released it (or the gate did under another
// taint's record, which the rule is about to adopt), and whose taint is off.
func (c *Config) RebootExposed(node *corev1.Node, tolerations []corev1.Toleration) bool {
	return len(c.RebootWindows(node, tolerations)) > 0
}

// RebootWindows are the rules that RebootExposed finds for the node.
func (c *Config) RebootWindows(node *corev1.Node, tolerations []corev1.Toleration) []*rule.Rule {
	var out []*rule.Rule
	for _, r := range c.Admitting() {
		released := r.Completed(node) || rule.InService(node, r.ReleasedAnnotation) // or under another record, not adopted yet
		if r.GatesReboots() && r.Matches(node) && released && !r.HasTaint(node) && !r.Tolerates(tolerations) {
			out = append(out, r)
		}
	}
	return out
}

// HasWindows reports whether a running rule whose taint the tolerations do not tolerate can
// leave a node it should hold untainted for a while: a continuous rule between its
// requirements failing and its taint's return, a rule that gates reboots between a reboot
// and its re-gate. Only the Pod guard closes those windows, so a binding to a node it
// cannot read in time is denied when this holds, and allowed (as the taint would) when not.
func (c *Config) HasWindows(tolerations []corev1.Toleration) bool {
	for _, r := range c.Admitting() {
		if (r.Mode == rule.Continuous || r.GatesReboots()) && !r.Tolerates(tolerations) {
			return true
		}
	}
	return false
}

// Orphan is a taint the gate placed for a rule it no longer runs (rule.Orphan).
type Orphan = rule.Orphan

// Orphans are the node's orphaned taints (rule.Orphans), in mark order, under the rules
// that own marks: those this config enforces, and every suspended one. A suspended rule
// writes nothing, made a dry run or not: suspend wins, and its taints wait for its resume.
func (c *Config) Orphans(node *corev1.Node) []Orphan {
	var owning []*rule.Rule
	for _, r := range c.EffectiveRules() {
		if !r.DryRun || r.Suspend {
			owning = append(owning, r)
		}
	}
	return rule.Orphans(owning, node, c.PlacedAnnotation, c.Instance)
}

// LiftOrphan lifts an orphaned taint (rule.LiftOrphan) and in the same write adds the taints
// admission would add to the node now (Admit): a node no rule has released stays held. It changes nothing unless o is still an orphan of n (it runs again on a
// fresh copy after a conflict).
func (c *Config) LiftOrphan(n *corev1.Node, o Orphan) {
	if c.Frozen(n) || !slices.Contains(c.Orphans(n), o) {
		return
	}
	rule.LiftOrphan(n, o, c.PlacedAnnotation, c.Instance, c.CompletedAnnotation)
	c.Admit(n)
}

// OwnTaint reports whether a taint of the node is the gate's: a rule's, or an orphan the
// gate placed for a rule it no longer runs. Its releases and orphan lifts take these off,
// so a DaemonSet that does not tolerate one is not kept off for good (rule.Untolerated).
func (c *Config) OwnTaint(node *corev1.Node) func(corev1.Taint) bool {
	orphans := c.Orphans(node)
	return func(t corev1.Taint) bool {
		for _, r := range c.EffectiveRules() {
			if r.Taint.Key == t.Key && r.Taint.Effect == t.Effect {
				return true
			}
		}
		for _, o := range orphans {
			if o.Taint.Key == t.Key && o.Taint.Effect == t.Effect {
				return true
			}
		}
		return false
	}
}

// Legacy reports whether the node keeps a rule's record where an earlier release kept it,
// under the rule's name (rule.Rule.Legacy): Migrate moves it before anything decides.
func (c *Config) Legacy(n *corev1.Node) bool {
	return slices.ContainsFunc(c.EffectiveRules(), func(r *rule.Rule) bool { return r.Legacy(n) })
}

// Migrate moves every rule's record from its legacy keys to the keys named after its taint
// (rule.Rule.Migrate), in one write.
func (c *Config) Migrate(n *corev1.Node) {
	for _, r := range c.EffectiveRules() {
		r.Migrate(n)
	}
}

// Frozen reports whether the gate lifts no orphan from the node yet: a suspended rule, made a
// dry run or not (suspend wins), selects it (its holds stay, and a taint it placed before
// its taint changed, or a re-gate under a record it had, may be the one holding the node; a
// mark does not say which rule placed it), or a rule that holds nodes from creation has no
// record of it yet (it has not joined the orphan's hold, nor adopted the node from the
// orphan's record, which tells it the boot to re-gate). While a rule is suspended, then, no
// orphan on the nodes it selects comes off, a condition rule's old key among them.
func (c *Config) Frozen(n *corev1.Node) bool {
	return c.SuspendedOn(n) || slices.ContainsFunc(c.Admitting(), func(r *rule.Rule) bool { return r.Matches(n) && !r.Recorded(n) })
}

// SuspendedOn reports whether a suspended rule, made a dry run or not, selects the node.
func (c *Config) SuspendedOn(n *corev1.Node) bool {
	return slices.ContainsFunc(c.EffectiveRules(), func(r *rule.Rule) bool { return r.Suspend && r.Matches(n) })
}

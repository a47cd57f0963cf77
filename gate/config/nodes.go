package config

import (
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

// HoldingTaint is the first taint on the node, of a rule that writes and still holds the
// node, that the tolerations do not tolerate. It is judged against the taint the node
// really carries: kubelet or Karpenter may have registered it with another value, and the
// scheduler compares with that one. A startup rule that has released the node no longer
// holds it, whatever its taint, unless it re-gated the node after a reboot; a continuous
// rule holds it while its taint is on.
func (c *Config) HoldingTaint(node *corev1.Node, tolerations []corev1.Toleration) (corev1.Taint, bool) {
	for _, r := range c.Gating() {
		if r.Mode == rule.Startup && r.Completed(node) && !r.Regated(node) {
			continue
		}
		for _, t := range node.Spec.Taints {
			if t.Key == r.Taint.Key && t.Effect == r.Taint.Effect && !rule.Tolerated(tolerations, &t) {
				return t, true
			}
		}
	}
	return corev1.Taint{}, false
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

// RebootedRule is the first rule that gates reboots, has released the node, sees it on a
// new boot and has not put its taint back yet, whose taint the tolerations do not
// tolerate: the window between a quick reboot, which may never turn the node NotReady, and
// the re-gate write.
func (c *Config) RebootedRule(node *corev1.Node, tolerations []corev1.Toleration) (*rule.Rule, bool) {
	for _, r := range c.Gating() {
		if rebootExposed(r, node, tolerations) && r.BootOf(node).Rebooted() {
			return r, true
		}
	}
	return nil, false
}

// RebootExposed reports whether a reboot the node has not reported yet would open
// RebootedRule's window for a Pod with these tolerations: a rule that gates reboots has
// released the node and its taint is off.
func (c *Config) RebootExposed(node *corev1.Node, tolerations []corev1.Toleration) bool {
	for _, r := range c.Gating() {
		if rebootExposed(r, node, tolerations) {
			return true
		}
	}
	return false
}

func rebootExposed(r *rule.Rule, node *corev1.Node, tolerations []corev1.Toleration) bool {
	return r.GatesReboots() && r.Completed(node) && !r.HasTaint(node) && !r.Tolerates(tolerations)
}

package check

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// KindStranded is a node that, at the end of a run, carries a taint of the gate's (one it
// marked as placed, or a rule's own) that no rule in force holds it with: no rule will
// ever take it off, and no reason for it shows in `gate status`.
const KindStranded = "stranded"

// KindGatePoolRefused is a node of the pool the gate's own replicas run on (a join marked
// gatePool) whose registration admission refused: with every replica gone, that pool could
// never grow back, and the gate never return (a deadlock).
const KindGatePoolRefused = "gate-pool-refused"

// Stranded judges the nodes as the run left them, with their init Pods, by the gate's
// config in force at the end: each taint of the gate's must be one a rule holds the node
// with, as the gate's own state function names it (config.Holds, rule.StateOf). A taint
// that someone else put back on a released node is theirs, not the gate's, and not judged
// here. The bound is the run's: it ends after its window, which a scenario sets past the
// gate's grace periods.
func Stranded(nodes []corev1.Node, pods []*corev1.Pod, cfg *config.Config) []Violation {
	var out []Violation
	for i := range nodes {
		n := &nodes[i]
		for _, t := range n.Spec.Taints {
			if why, stranded := strandedBy(n, pods, cfg, t); stranded {
				out = append(out, Violation{Kind: KindStranded, Node: n.Name, Detail: fmt.Sprintf("taint %s: %s", t.ToString(), why)})
			}
		}
	}
	return out
}

// strandedBy says whether taint t of node n is the gate's and held by no rule, and why.
func strandedBy(n *corev1.Node, pods []*corev1.Pod, cfg *config.Config, t corev1.Taint) (string, bool) {
	marked := false
	for _, r := range cfg.EffectiveRules() {
		if r.Mode == rule.Condition || r.Taint.Key != t.Key || r.Taint.Effect != t.Effect {
			continue
		}
		if cfg.Holds(r, n) {
			return "", false
		}
		st, why := rule.StateOf(r, cfg.Readiness(), rule.Input{Node: n, Pods: pods})
		if st == rule.StateForeign || st == rule.StateOutside || st == rule.StateDryRun && !r.Placed(n) {
			continue // not the rule's: put there by someone else
		}
		return fmt.Sprintf("rule %s does not hold the node (state %s: %s)", r.Name, st, why), true
	}
	for _, o := range cfg.Orphans(n) {
		marked = marked || o.Taint.Key == t.Key && o.Taint.Effect == t.Effect
	}
	// An orphan on a node a suspended rule selects waits by design (config.Frozen): the
	// suspension is the reason `gate status` shows.
	if marked && !cfg.SuspendedOn(n) {
		return "placed by the gate for a rule it no longer runs, and still on", true
	}
	return "", false
}

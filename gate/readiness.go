package gate

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// Decision is the outcome of a rule's decision for one node (see rule.Decide).
type Decision = rule.Decision

// Decide says whether the config's first rule (the default rule, when the config has no
// Rules) may release a gated node. It is pure: the answer depends only on its arguments.
// The rules themselves are in the rule package; this is the single-rule entry point that
// the gate has always had.
func Decide(node *corev1.Node, pods []*corev1.Pod, now time.Time, cfg *Config) Decision {
	return DecideExpecting(node, pods, nil, now, cfg)
}

// DecideExpecting is Decide, also told which components are expected on the node although
// none of their Pods is there yet: a DaemonSet of theirs targets it (expected[name]). Such a
// component holds the node like a Pod that is not ready, so that a node is never released
// while one component's DaemonSet has yet to create or bind its Pod.
func DecideExpecting(node *corev1.Node, pods []*corev1.Pod, expected map[string]bool, now time.Time, cfg *Config) Decision {
	return rule.Decide(cfg.EffectiveRules()[0], cfg.Readiness(), rule.Input{Node: node, Pods: pods, Expected: expected, Now: now})
}

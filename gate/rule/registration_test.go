package rule

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// labelled sets one label on the node.
func labelled(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
	}
}

// TestDecideAfterRegistration: a startup rule's taint that an autoscaler put back when it
// registered a node the rule had released comes off again while the requirements hold; an
// operator's taint on an initialized node, a node no autoscaler registered, a reboot's
// re-gate and a continuous rule's taint are left to their own paths.
func TestDecideAfterRegistration(t *testing.T) {
	const completed = "startup.k8s.io/completedAt.cni"
	released := annotated(completed, strconv.FormatInt(t0.Add(time.Minute).Unix(), 10))
	registered := labelled(KarpenterRegisteredLabel, "true")
	initialized := labelled(KarpenterInitializedLabel, "true")
	now := t0.Add(time.Hour)
	ready := []*corev1.Pod{podSince(true, t0)}
	tests := []struct {
		name   string
		rule   func(*Rule)
		node   *corev1.Node
		pods   []*corev1.Pod
		want   Decision
		reason string
	}{
		{name: "put back at registration, ready: off again", node: node(released, tainted, registered), pods: ready,
			want: Decision{Release: true, Met: true, ReadyAt: t0}, reason: "put the taint back when it registered"},
		{name: "put back at registration, not ready: held", node: node(released, tainted, registered), pods: []*corev1.Pod{podSince(false, t0)},
			want: Decision{}, reason: "not ready (the autoscaler put the taint back when it registered the node"},
		{name: "initialized node: an operator's taint, left alone", node: node(released, tainted, registered, initialized), pods: ready,
			want: Decision{Met: true}, reason: "released"},
		{name: "no autoscaler: left alone", node: node(released, tainted), pods: ready,
			want: Decision{Met: true}, reason: "released"},
		{name: "not released yet: the first release", node: node(tainted, registered), pods: ready,
			want: Decision{Release: true, Met: true, ReadyAt: t0}, reason: "ready"},
		{name: "a continuous rule's own taint: its own path", rule: func(r *Rule) { r.Mode = Continuous },
			node: node(released, tainted, registered), pods: []*corev1.Pod{podSince(false, t0)},
			want: Decision{}, reason: "not ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Rule{Name: "cni", Taint: cniTaint, Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}}
			if tc.rule != nil {
				tc.rule(&r)
			}
			checkDecision(t, Decide(compile(t, r), Readiness{}, Input{Node: tc.node, Pods: tc.pods, Now: now}), tc.want, tc.reason)
		})
	}
}

// TestRegatedIsNotTheAutoscalersCopy: a rule gating reboots that re-gated the node owns
// its taint, whatever the autoscaler's labels say.
func TestRegatedIsNotTheAutoscalersCopy(t *testing.T) {
	r := rebootRule(t, nil)
	const completed = "startup.k8s.io/completedAt.cni"
	reg := labelled(KarpenterRegisteredLabel, "true")
	if st, _ := StateOf(r, Readiness{}, Input{Node: node(annotated(completed, "1"), annotated(completed+"_regatedAt", "2"), tainted, reg)}); st != StateRegated {
		t.Errorf("a re-gated node: state %q, want %q", st, StateRegated)
	}
	if st, _ := StateOf(r, Readiness{}, Input{Node: node(annotated(completed, "1"), tainted, reg)}); st != StateReturned {
		t.Errorf("a released node with the taint back at registration: state %q, want %q", st, StateReturned)
	}
}

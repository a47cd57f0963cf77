package rule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestApplyRechecksTheSelector: each write rests on whether the rule selects the node. A
// write that puts the taint on, adopts or replaces the node was decided on a node the rule
// selected, and a removal of a node that left the selector on one it did not; on a fresh
// copy where that changed since (a conflict's retry) it is not made. Each row's write is
// made on the node as decided on, so that a declined write is the selector's doing.
func TestApplyRechecksTheSelector(t *testing.T) {
	r := rebootRule(t, func(r *Rule) {
		r.NodeSelector, r.ReleasedAnnotation = "pool=gpu", "startup.k8s.io/completedAt"
		r.PlacedAnnotation, r.PeerTaints = "startup.k8s.io/taintedAt.cni", []corev1.Taint{peerTaint}
	})
	gpu, placed := labelled("pool", "gpu"), annotated("startup.k8s.io/taintedAt.cni", PlacedValue(cniTaint, ""))
	leave := func(n *corev1.Node) { delete(n.Labels, "pool") }
	for _, tc := range []struct {
		d      Decision
		node   *corev1.Node
		change func(*corev1.Node)
	}{
		{Decision{Write: WriteTaint}, node(gpu, completed), leave},
		{Decision{Write: WriteRegate, Boot: "b2", Prints: []string{fp(0)}}, node(gpu, releasedOn("b1", 0), onBoot("b2")), leave},
		{Decision{Write: WriteJoin}, node(gpu, func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, peerTaint) }), leave},
		{Decision{Write: WriteAdopt}, node(gpu, annotated("startup.k8s.io/completedAt.other", "1")), leave},
		{Decision{Write: WriteReplace, State: StateHeld}, node(gpu, tainted), leave},
		{Decision{Write: WriteRemove, State: StateLeft}, node(tainted, placed), gpu},
	} {
		t.Run(string(tc.d.Write), func(t *testing.T) {
			if decided := tc.node.DeepCopy(); !r.Apply(tc.d, decided, t0) {
				t.Fatalf("Apply(%s) declined on the node it was decided on: %v", tc.d.Write, decided.Annotations)
			}
			fresh := tc.node.DeepCopy()
			tc.change(fresh)
			before := fresh.DeepCopy()
			if r.Apply(tc.d, fresh, t0) || !cmp.Equal(before, fresh) {
				t.Errorf("Apply(%s) wrote on a copy whose selection changed since the decision:\n%s", tc.d.Write, cmp.Diff(before, fresh))
			}
		})
	}
}

var peerTaint = corev1.Taint{Key: "example.com/gpu-unready", Effect: corev1.TaintEffectNoSchedule}

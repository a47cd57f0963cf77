package rule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestApplyRechecksTheSelector: a write that puts the taint on, adopts or replaces the node
// was decided on a node the rule selected; on a fresh copy that left the selector since (a
// conflict's retry) it is not made. Each row's write is made on the node still selected, so
// that a declined write is the selector's doing.
func TestApplyRechecksTheSelector(t *testing.T) {
	r := rebootRule(t, func(r *Rule) { r.NodeSelector, r.ReleasedAnnotation = "pool=gpu", "startup.k8s.io/completedAt" })
	gpu := labelled("pool", "gpu")
	for _, tc := range []struct {
		d    Decision
		node *corev1.Node
	}{
		{Decision{Write: WriteTaint}, node(gpu, completed)},
		{Decision{Write: WriteRegate, Boot: "b2", Prints: []string{fp(0)}}, node(gpu, releasedOn("b1", 0), onBoot("b2"))},
		{Decision{Write: WriteAdopt}, node(gpu, annotated("startup.k8s.io/completedAt.other", "1"))},
		{Decision{Write: WriteReplace, State: StateHeld}, node(gpu, tainted)},
	} {
		t.Run(string(tc.d.Write), func(t *testing.T) {
			if selected := tc.node.DeepCopy(); !r.Apply(tc.d, selected, t0) {
				t.Fatalf("Apply(%s) declined on the node the rule selects: %v", tc.d.Write, selected.Annotations)
			}
			left := tc.node.DeepCopy()
			delete(left.Labels, "pool")
			before := left.DeepCopy()
			if r.Apply(tc.d, left, t0) || !cmp.Equal(before, left) {
				t.Errorf("Apply(%s) wrote on a node that left the selector:\n%s", tc.d.Write, cmp.Diff(before, left))
			}
		})
	}
}

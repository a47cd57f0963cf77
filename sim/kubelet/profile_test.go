package kubelet

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeProfileApply(t *testing.T) {
	own := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "static-7", Labels: map[string]string{
			corev1.LabelHostname: "static-7", "sim.startupgate.io/scenario": "bench-static", "kubernetes.io/os": "linux"}}}
	}
	tests := []struct {
		name                      string
		p                         NodeProfile
		labels, annotations, imgs int
		conditions                int
	}{
		{name: "default", p: DefaultProfile(), labels: 44, annotations: 12, imgs: 50, conditions: 10},
		{name: "more than the templates", p: NodeProfile{Labels: 60, Annotations: 20, Images: 70, ProblemConditions: 8, Ready: true},
			labels: 60, annotations: 20, imgs: 70, conditions: 12},
		{name: "not ready: no conditions", p: NodeProfile{Labels: 3, Images: 1}, labels: 3, imgs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.p.Apply(own())
			if len(n.Labels) != tc.labels || len(n.Annotations) != tc.annotations || len(n.Status.Images) != tc.imgs || len(n.Status.Conditions) != tc.conditions {
				t.Errorf("labels %d, annotations %d, images %d, conditions %d; want %d, %d, %d, %d",
					len(n.Labels), len(n.Annotations), len(n.Status.Images), len(n.Status.Conditions), tc.labels, tc.annotations, tc.imgs, tc.conditions)
			}
			if n.Labels["sim.startupgate.io/scenario"] != "bench-static" || n.Labels[corev1.LabelHostname] != "static-7" {
				t.Errorf("the kubelet's own labels were replaced: %v", n.Labels)
			}
			if diff := cmp.Diff(tc.p.Apply(own()).Status.Images, n.Status.Images); diff != "" {
				t.Errorf("the same name gave different images (-want +got):\n%s", diff)
			}
		})
	}
}

// The default profile is as large as a cloud node: the issue that asked for it puts a real
// one at 10-20 KB, which is what makes a large plane cost what it does.
func TestDefaultProfileSize(t *testing.T) {
	n := DefaultProfile().Apply(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1"}})
	raw, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 10_000 || len(raw) > 20_000 {
		t.Errorf("a default-profile Node is %d bytes of JSON, want 10-20 KB", len(raw))
	}
	other := DefaultProfile().Apply(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-2"}})
	if other.Status.Addresses[0].Address == n.Status.Addresses[0].Address && other.Spec.ProviderID == n.Spec.ProviderID {
		t.Errorf("two names gave the same address and provider ID")
	}
}

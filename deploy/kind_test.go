package deploy_test

import (
	"os"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// The kind demo: its cluster config decodes as kind's API and has the documented shape.

func TestKindCluster(t *testing.T) {
	raw, err := os.ReadFile("kind/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		t.Fatalf("kind/cluster.yaml: %v", err)
	}
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Errorf("kind/cluster.yaml is %s %s", c.APIVersion, c.Kind)
	}
	cfg := defaultConfig(t)
	var planes, system, gated int
	for _, n := range c.Nodes {
		switch n.Role {
		case kindv1alpha4.ControlPlaneRole:
			planes++
		case kindv1alpha4.WorkerRole:
			if cfg.Gated(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: n.Labels}}) {
				gated++
			} else {
				system++
			}
		}
	}
	if planes != 1 || system != 1 || gated != 3 {
		t.Errorf("kind cluster: %d control planes, %d system workers, %d gated workers; want 1, 1, 3", planes, system, gated)
	}
	out, err := exec.Command("bash", "-n", "kind/demo.sh").CombinedOutput()
	if err != nil {
		t.Errorf("bash -n kind/demo.sh: %v\n%s", err, out)
	}
}

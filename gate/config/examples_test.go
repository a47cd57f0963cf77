package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExcludeExamples: every exclusion example of deploy/examples/exclude loads, leaves the
// node its comment names out of every rule and gates a worker, and names nothing of another
// platform's.
func TestExcludeExamples(t *testing.T) {
	for name, tc := range map[string]struct {
		excluded, worker map[string]string
	}{
		"aks":       {map[string]string{"kubernetes.azure.com/mode": "system"}, map[string]string{"kubernetes.azure.com/mode": "user"}},
		"eks":       {map[string]string{"eks.amazonaws.com/nodegroup": "system"}, map[string]string{"eks.amazonaws.com/nodegroup": "workers"}},
		"gke":       {map[string]string{"cloud.google.com/gke-nodepool": "system-pool"}, map[string]string{"cloud.google.com/gke-nodepool": "default-pool"}},
		"karpenter": {map[string]string{}, map[string]string{"karpenter.sh/nodepool": "default"}},
		"kubeadm":   {map[string]string{"node-role.kubernetes.io/control-plane": ""}, map[string]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../../deploy/examples/exclude", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, warnings, err := Load(raw)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("Load() = %v, warnings %v", err, warnings)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			n := func(l map[string]string) *corev1.Node {
				return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: l}}
			}
			if cfg.Gated(n(tc.excluded)) || !cfg.Gated(n(tc.worker)) {
				t.Errorf("Gated(excluded) = %v, Gated(worker) = %v; want false, true (selector %q)", cfg.Gated(n(tc.excluded)), cfg.Gated(n(tc.worker)), cfg.EffectiveRules()[0].NodeSelector)
			}
			if name != "aks" && strings.Contains(string(raw), "kubernetes.azure.com") {
				t.Errorf("the %s example names AKS's label", name)
			}
		})
	}
}

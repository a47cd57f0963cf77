package config

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExclude: the exclusion ends every rule's selector, a rule with none of its own too,
// so an excluded node is gated by no rule; the default keeps the AKS system pool and the
// control plane out; an EKS-style exclusion names nothing of AKS's; a bad requirement is
// an error naming it.
func TestExclude(t *testing.T) {
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	eks := []metav1.LabelSelectorRequirement{{Key: "eks.amazonaws.com/nodegroup", Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}}}
	for _, tc := range []struct {
		name    string
		exclude []metav1.LabelSelectorRequirement
		labels  map[string]string
		gated   bool
	}{
		{"default: a worker", nil, map[string]string{"kubernetes.azure.com/mode": "user"}, true},
		{"default: the AKS system pool", nil, map[string]string{"kubernetes.azure.com/mode": "system"}, false},
		{"default: a control-plane node", nil, map[string]string{"node-role.kubernetes.io/control-plane": ""}, false},
		{"EKS: the system node group", eks, map[string]string{"eks.amazonaws.com/nodegroup": "system"}, false},
		{"EKS: a worker group", eks, map[string]string{"eks.amazonaws.com/nodegroup": "workers"}, true},
		{"EKS: an AKS label means nothing", eks, map[string]string{"kubernetes.azure.com/mode": "system"}, true},
		{"NotIn: only the listed pools are gated", []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gpu"}}},
			map[string]string{"pool": "cpu"}, false},
		{"DoesNotExist: nodes without the label are left alone", []metav1.LabelSelectorRequirement{{Key: "gated", Operator: metav1.LabelSelectorOpDoesNotExist}},
			map[string]string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t, func(c *Config) {
				if tc.exclude != nil {
					c.Exclude = tc.exclude
				}
			})
			if got := cfg.Gated(node(tc.labels)); got != tc.gated {
				t.Errorf("Gated() = %v, want %v (rule selector %q)", got, tc.gated, cfg.EffectiveRules()[0].NodeSelector)
			}
			// The default rule selects every node exclude leaves: excluded is not gated.
			if got := cfg.Excluded(node(tc.labels)); got == tc.gated {
				t.Errorf("Excluded() = %v, want %v", got, !tc.gated)
			}
			if tc.exclude != nil && strings.Contains(cfg.EffectiveRules()[0].NodeSelector, "kubernetes.azure.com") {
				t.Errorf("rule selector %q names AKS's label, which the exclusion does not", cfg.EffectiveRules()[0].NodeSelector)
			}
		})
	}
	for _, bad := range []metav1.LabelSelectorRequirement{
		{Key: "pool", Operator: "Equals", Values: []string{"x"}},
		{Key: "pool", Operator: metav1.LabelSelectorOpIn},
		{Key: "pool", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}},
		{Key: "not a key!", Operator: metav1.LabelSelectorOpExists},
	} {
		cfg := DefaultConfig()
		cfg.Exclude = []metav1.LabelSelectorRequirement{bad}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "exclude[0]") {
			t.Errorf("exclude %+v: Validate() = %v, want an error naming exclude[0]", bad, err)
		}
	}
}

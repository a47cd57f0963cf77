package setup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// TestCacheOptionsPodScope: the manager's cache holds the first Pod scope, as the gate
// always cached the components' Pods when they share a label key: that key, and their
// namespace when they share one; the further scopes are caches of their own (podCaches).
func TestCacheOptionsPodScope(t *testing.T) {
	for _, tc := range []struct {
		name       string
		components []rule.Component
		selector   string
		namespaces []string
		scopes     int
	}{
		{"default", nil, "startup.k8s.io/component", nil, 1},
		{"one namespace, one key", []rule.Component{{Namespace: "kube-system", Selector: "app=cni"}, {Namespace: "kube-system", Selector: "app=csi"}}, "app", []string{"kube-system"}, 1},
		{"as the charts label them", []rule.Component{{Namespace: "gpu-operator", Selector: "app=nvidia-driver-daemonset"}, {Namespace: "kube-system", Selector: "k8s-app=cilium"}},
			"app=nvidia-driver-daemonset", []string{"gpu-operator"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, func(c *config.Config) {
				if tc.components != nil {
					c.Components = tc.components
				}
			})
			var by cache.ByObject
			for obj, b := range CacheOptions(cfg, Options{}).ByObject {
				if _, ok := obj.(*corev1.Pod); ok {
					by = b
				}
			}
			var got []string
			for ns := range by.Namespaces {
				got = append(got, ns)
			}
			if by.Label.String() != tc.selector || len(got) != len(tc.namespaces) || len(got) > 0 && got[0] != tc.namespaces[0] || len(cfg.PodScopes()) != tc.scopes {
				t.Errorf("Pod cache %q in %v, %d scopes; want %q in %v, %d", by.Label, got, len(cfg.PodScopes()), tc.selector, tc.namespaces, tc.scopes)
			}
		})
	}
}

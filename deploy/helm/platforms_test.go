package helm_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// platforms are the values files an operator installs with (-f platforms/NAME.yaml), one
// for each kind of cluster docs/operations.md names.
var platforms = []string{"aks", "eks-auto-mode", "eks", "gke", "karpenter", "kubeadm"} // as filepath.Glob sorts them

// warming is a taint key of the operator's own, which everything the chart derives from the
// config must follow.
const warming = "example.com/warming"

// TestPlatformFiles renders each platform file with a config of the operator's own taint
// key: the gate's Pods must run on the nodes the file excludes (a required affinity, one
// term per requirement), which the gate's config excludes too; they tolerate the
// configured taint, CriticalAddonsOnly and whatever the file adds; mode policy places that
// key; GKE's file renders the ResourceQuota its critical Pods need.
func TestPlatformFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "platforms", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	if !slices.Equal(names, platforms) {
		t.Fatalf("platform files %v, want %v", names, platforms)
	}
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			var vals map[string]any
			if err := yaml.Unmarshal(readFile(t, files[i]), &vals); err != nil {
				t.Fatal(err)
			}
			vals["config"] = map[string]any{"taint": map[string]any{"key": warming, "value": "wait", "effect": "NoSchedule"}}
			objs := renderChart(t, vals, nil)
			cfg := renderedConfig(t, objs)
			if len(cfg.Exclude) == 0 {
				t.Fatal("the file excludes no node: the gate would have none it never gates to run on")
			}
			d := deployment(t, mustFind(t, objs, "Deployment", "startupgate"))
			checkAffinity(t, cfg.Exclude, mustFind(t, objs, "Deployment", "startupgate"), true)
			want := []corev1.Toleration{{Key: warming, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}
			if extra, ok := vals["tolerations"]; ok {
				var more []corev1.Toleration
				raw, _ := json.Marshal(extra)
				if err := json.Unmarshal(raw, &more); err != nil {
					t.Fatal(err)
				}
				want = append(want, more...)
			}
			if got := d.Spec.Template.Spec.Tolerations; !slices.Equal(got, want) {
				t.Errorf("the gate's Pods tolerate %v, want %v", got, want)
			}
			// In mode policy the policy places the operator's key, never the default one
			// (TestPolicyFollowsConfigKeys holds it to gate --print-policy).
			withPolicy := maps.Clone(vals)
			withPolicy["mode"] = "policy"
			pol, _ := json.Marshal(mustFind(t, renderChart(t, withPolicy, nil), "MutatingAdmissionPolicy", "startupgate-node-taint").Object["spec"])
			if !strings.Contains(string(pol), warming) || strings.Contains(string(pol), "startup.k8s.io/initializing") {
				t.Errorf("mode policy: the policy does not place %s alone: %s", warming, pol)
			}
			quota := find(objs, "ResourceQuota", "startupgate-critical-pods")
			if (quota != nil) != (name == "gke") {
				t.Errorf("ResourceQuota rendered: %v; want it on GKE only", quota != nil)
			}
			if quota != nil {
				scope, _, _ := unstructured.NestedSlice(quota.Object, "spec", "scopeSelector", "matchExpressions")
				if raw, _ := json.Marshal(scope); !strings.Contains(string(raw), `"values":["system-cluster-critical"]`) {
					t.Errorf("the quota's scope %s is not the gate's PriorityClass", raw)
				}
			}
		})
	}
}

// TestNodeAffinityOptOut: the excluded nodes are only preferred with failurePolicy Ignore
// (a gate that is gone then blocks no node) or when the operator opts out.
func TestNodeAffinityOptOut(t *testing.T) {
	exclude := []metav1.LabelSelectorRequirement{{Key: "kubernetes.azure.com/mode", Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}},
		{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpExists}}
	for _, c := range []struct {
		name     string
		vals     map[string]any
		required bool
	}{
		{"default", map[string]any{}, true},
		{"failurePolicy Ignore", map[string]any{"failurePolicy": "Ignore"}, false},
		{"opted out", map[string]any{"requireExcludedNodes": false}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkAffinity(t, exclude, mustFind(t, renderChart(t, c.vals, nil), "Deployment", "startupgate"), c.required)
		})
	}
}

// TestHostNetworkAndPorts: with hostNetwork the gate's Pods use the node's network (and the
// cluster's DNS still), and every port it listens on follows ports: its flags, the
// container's ports, its probes, and the Services' target ports.
func TestHostNetworkAndPorts(t *testing.T) {
	objs := renderChart(t, map[string]any{"hostNetwork": true, "ports": map[string]any{"webhook": 10443, "metrics": 18080, "health": 18081}}, nil)
	d := deployment(t, mustFind(t, objs, "Deployment", "startupgate"))
	spec := d.Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %q; want true, ClusterFirstWithHostNet", spec.HostNetwork, spec.DNSPolicy)
	}
	c := spec.Containers[0]
	for _, arg := range []string{"--webhook-port=10443", "--metrics-bind-address=:18080", "--health-probe-bind-address=:18081"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if want := map[string]int32{"webhook": 10443, "metrics": 18080, "health": 18081}; !maps.Equal(ports, want) {
		t.Errorf("container ports %v, want %v", ports, want)
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if p.HTTPGet.Port.IntValue() != 18081 {
			t.Errorf("a probe reads port %s, want 18081", p.HTTPGet.Port.String())
		}
	}
	for name, want := range map[string]int{"startupgate-webhook": 10443, "startupgate-metrics": 18080} {
		ps, _, _ := unstructured.NestedSlice(mustFind(t, objs, "Service", name).Object, "spec", "ports")
		if got := fmt.Sprint(ps[0].(map[string]any)["targetPort"]); got != fmt.Sprint(want) {
			t.Errorf("Service %s targets port %s, want %d", name, got, want)
		}
	}
	if d := deployment(t, mustFind(t, renderChart(t, map[string]any{}, nil), "Deployment", "startupgate")); d.Spec.Template.Spec.HostNetwork {
		t.Error("hostNetwork by default")
	}
}

func deployment(t *testing.T, o *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

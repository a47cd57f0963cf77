package rule_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// A node is not released while a required component's DaemonSet targets it but has not yet
// put its Pod there (found by the simulator's multi-component scenario: GPU nodes released
// before their driver Pod was bound).
func TestComponentExpectedByItsDaemonSetHoldsTheNode(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Components = []rule.Component{
			{Name: "init", Selector: "startup.k8s.io/component=init"},
			{Name: "gpu", Selector: "startup.k8s.io/component=gpu"},
		}
	})
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpuNode := testobj.Node("g", created, testobj.NodeLabel("gpu", "true"))
	cpuNode := testobj.Node("c", created)
	ds := func(name, component string, nodeSelector map[string]string) appsv1.DaemonSet {
		return appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": component}},
				Spec:       corev1.PodSpec{NodeSelector: nodeSelector},
			}},
		}
	}
	dss := []appsv1.DaemonSet{ds("init", "init", nil), ds("driver", "gpu", map[string]string{"gpu": "true"}), ds("other", "agent", nil)}

	tests := []struct {
		name        string
		node        *corev1.Node
		wantExpect  map[string]bool
		wantRelease bool
	}{
		{"gpu node: the driver's DaemonSet targets it, no Pod yet", gpuNode, map[string]bool{"init": true, "gpu": true}, false},
		{"cpu node: the driver's DaemonSet does not target it", cpuNode, map[string]bool{"init": true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cfg.EffectiveRules()[0].ExpectedOn(tt.node, dss)
			if len(got) != len(tt.wantExpect) || got["init"] != tt.wantExpect["init"] || got["gpu"] != tt.wantExpect["gpu"] {
				t.Fatalf("expectedOn = %v, want %v", got, tt.wantExpect)
			}
			pods := []*corev1.Pod{testobj.Pod("init-"+tt.node.Name, tt.node.Name, created.Add(time.Second), testobj.ReadyAt(created.Add(2*time.Second)))}
			d := decideExpecting(tt.node, pods, got, created.Add(time.Minute), cfg)
			if d.Release != tt.wantRelease {
				t.Errorf("DecideExpecting: release %v (%s), want %v", d.Release, d.Reason, tt.wantRelease)
			}
			// Without the DaemonSets, only the Pods on the node count: the old behaviour.
			if d := decide(tt.node, pods, created.Add(time.Minute), cfg); !d.Release {
				t.Errorf("Decide without expectations held the node: %s", d.Reason)
			}
		})
	}
}

// TestLabelOutside: a DaemonSet of a component whose required scheduling reads a label the
// cache does not keep is found, with that label; other DaemonSets, and match fields (the
// node's name), never are.
func TestLabelOutside(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Components = []rule.Component{{Name: "init", Namespace: "kube-system", Selector: "startup.k8s.io/component=init"}}
	})
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists}
	}
	ds := func(ns, component string, spec corev1.PodSpec) appsv1.DaemonSet {
		return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: ns},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": component}}, Spec: spec}}}
	}
	keeps := func(key string) bool { return key == "kubernetes.io/os" }
	tests := []struct {
		name    string
		ds      appsv1.DaemonSet
		wantDS  string
		wantKey string
	}{
		{"no node selector", ds("kube-system", "init", corev1.PodSpec{}), "", ""},
		{"a kept key", ds("kube-system", "init", corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}), "", ""},
		{"a node selector key not kept", ds("kube-system", "init", corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux", "gpu": "true"}}),
			"kube-system/ds", "gpu"},
		{"an affinity key not kept, in a second term", ds("kube-system", "init", corev1.PodSpec{Affinity: required(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("kubernetes.io/os")}},
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool")}})}),
			"kube-system/ds", "pool"},
		{"match fields read the name", ds("kube-system", "init", corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}})}), "", ""},
		{"preferred affinity does not hold a node", ds("kube-system", "init", corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool")}}}}}}}), "", ""},
		{"another component's DaemonSet", ds("kube-system", "agent", corev1.PodSpec{NodeSelector: map[string]string{"gpu": "true"}}), "", ""},
		{"the component's labels in another namespace", ds("default", "init", corev1.PodSpec{NodeSelector: map[string]string{"gpu": "true"}}), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotDS, gotKey := cfg.EffectiveRules()[0].LabelOutside([]appsv1.DaemonSet{tt.ds}, keeps)
			if gotDS != tt.wantDS || gotKey != tt.wantKey {
				t.Errorf("LabelOutside = %q, %q; want %q, %q", gotDS, gotKey, tt.wantDS, tt.wantKey)
			}
		})
	}
}

// TestUntolerated: a component whose DaemonSet does not tolerate another taint of the node
// (a GPU pool's, a dedicated pool's) is named with that taint, as the DaemonSet controller
// judges it; taints that go on their own (a new node's not-ready, a cloud provider's
// uninitialized), PreferNoSchedule, the gate's own taints and a second DaemonSet of the
// component that tolerates it leave it free.
func TestUntolerated(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	r := cfg.EffectiveRules()[0]
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ds := func(name string, spec corev1.PodSpec) appsv1.DaemonSet {
		return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": "init"}}, Spec: spec}}}
	}
	tolerates := corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: gpu.Key, Operator: corev1.TolerationOpExists}}}
	node := func(taints ...corev1.Taint) *corev1.Node {
		return testobj.Node("n", created, testobj.Taints(taints...))
	}
	tests := []struct {
		name string
		node *corev1.Node
		dss  []appsv1.DaemonSet
		want string // the component's entry, "" for none
	}{
		{"another pool's taint", node(gpu), []appsv1.DaemonSet{ds("init", corev1.PodSpec{})},
			"daemonset kube-system/init does not tolerate taint nvidia.com/gpu=present:NoSchedule"},
		{"tolerated", node(gpu), []appsv1.DaemonSet{ds("init", tolerates)}, ""},
		{"a second DaemonSet of the component tolerates it", node(gpu), []appsv1.DaemonSet{ds("a", corev1.PodSpec{}), ds("b", tolerates)}, ""},
		{"the gate's own taint", node(cfg.Taint), []appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, ""},
		{"lifecycle taints", node(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), []appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, ""},
		{"a dedicated pool's NoExecute", node(corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}),
			[]appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, "daemonset kube-system/init does not tolerate taint dedicated=db:NoExecute"},
		{"not-ready, which a new node carries until its network is up", node(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}),
			[]appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, ""},
		{"a cloud provider's, before it initializes the node", node(corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
			[]appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, ""},
		{"PreferNoSchedule", node(corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}), []appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, ""},
		{"a DaemonSet that does not target the node", node(gpu), []appsv1.DaemonSet{ds("init", corev1.PodSpec{NodeSelector: map[string]string{"pool": "x"}})}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Untolerated(tt.node, tt.dss, cfg.OwnTaint(tt.node))
			if got["init"] != tt.want || (tt.want == "" && len(got) > 0) {
				t.Errorf("Untolerated = %v, want init: %q", got, tt.want)
			}
		})
	}
	// The hold it causes names the taint.
	n := node(gpu)
	d := rule.Decide(r, cfg.Readiness(), rule.Input{Node: n, Expected: map[string]bool{"init": true},
		Blocked: r.Untolerated(n, []appsv1.DaemonSet{ds("init", corev1.PodSpec{})}, cfg.OwnTaint(n)), Now: created.Add(time.Minute)})
	if d.Release || !strings.Contains(d.Reason, "nvidia.com/gpu") {
		t.Errorf("Decide: release %v, reason %q; want held, naming nvidia.com/gpu", d.Release, d.Reason)
	}
}

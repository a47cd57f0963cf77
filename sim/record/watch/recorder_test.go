package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestInitReadyWithContinuousComponent: a node's init Pods are ready for its startup
// release once every startup component is ready and every continuous one has been. Under
// load the startup init Pod can turn ready only after the (already released) CNI Pod has
// gone unready; requiring both at once would put InitReady after the release and call a
// correct release premature.
func TestInitReadyWithContinuousComponent(t *testing.T) {
	r := NewRecorder(validConfig(t), nil, "ns", []scenario.InitDaemonSet{
		{Name: "init", Labels: map[string]string{"c": "init"}},
		{Name: "cni", Labels: map[string]string{"c": "cni"}, Continuous: true},
	})
	r.node(nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "1"}})
	for _, p := range []*corev1.Pod{
		initPod("init", "2", false), initPod("cni", "3", true), // the CNI is ready and released first
		initPod("cni", "4", false), // then goes unready
		initPod("init", "5", true), // the startup component turns ready
	} {
		r.pod(p)
	}
	if got := r.nodes["u"].InitReady.RV; got != 5 {
		t.Errorf("InitReady at rv %d, want 5: the init Pod's readiness, with the continuous CNI ready once before", got)
	}
}

// TestInitReadyWaitsForEveryStartupComponent: two startup components must be ready at the
// same moment; one that was ready and went unready again does not count.
func TestInitReadyWaitsForEveryStartupComponent(t *testing.T) {
	r := NewRecorder(validConfig(t), nil, "ns", []scenario.InitDaemonSet{
		{Name: "a", Labels: map[string]string{"c": "a"}},
		{Name: "b", Labels: map[string]string{"c": "b"}},
	})
	r.node(nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "1"}})
	for _, p := range []*corev1.Pod{initPod("a", "2", true), initPod("a", "3", false), initPod("b", "4", true)} {
		r.pod(p)
	}
	if rec := r.nodes["u"]; !rec.InitReady.IsZero() {
		t.Fatalf("InitReady at rv %d; want none: a went unready before b was ready", rec.InitReady.RV)
	}
	r.pod(initPod("a", "5", true))
	if got := r.nodes["u"].InitReady.RV; got != 5 {
		t.Errorf("InitReady at rv %d, want 5", got)
	}
}

func validConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// initPod is an init Pod on node n whose label c=name makes it component name's.
func initPod(name, rv string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), ResourceVersion: rv,
			Labels: map[string]string{"c": name}},
		Spec:   corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

// TestIsForeign: a taint is another writer's unless it is a rule's or its node's lifecycle
// owns it (the node lifecycle controller, the cloud provider, Karpenter), whose removals
// are never lost writes.
func TestIsForeign(t *testing.T) {
	cfg := validConfig(t)
	for _, tt := range []struct {
		key  string
		want bool
	}{
		{config.DefaultTaintKey, false},
		{"node.kubernetes.io/not-ready", false},
		{"node.cloudprovider.kubernetes.io/uninitialized", false},
		{"karpenter.sh/unregistered", false},
		{"karpenter.sh/disrupted", false},
		{"example.com/dedicated", true},
		{"karpenter.k8s.aws/foo", true},
	} {
		if got := isForeign(corev1.Taint{Key: tt.key, Effect: corev1.TaintEffectNoSchedule}, cfg); got != tt.want {
			t.Errorf("isForeign(%s) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestPlacedIgnoresValue: the gate's mark names a taint by key and effect, as the gate
// matches it; a placed taint with a value (the default rule's "wait") is still the gate's,
// and its lift after a re-key is no lost foreign taint.
func TestPlacedIgnoresValue(t *testing.T) {
	cfg := validConfig(t)
	taint := corev1.Taint{Key: "example.com/old", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		cfg.PlacedAnnotation + ".default": "example.com/old:NoSchedule"}}}
	if !placed(n, taint, cfg) {
		t.Errorf("placed(%s) = false with the mark %q", taint.ToString(), n.Annotations)
	}
	other := corev1.Taint{Key: "example.com/other", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	if placed(n, other, cfg) {
		t.Errorf("placed(%s) = true with a mark for another key", other.ToString())
	}
}

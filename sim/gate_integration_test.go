package sim

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// equivInput is a Node as registered, and what each rule's taint count must then be.
type equivInput struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	taints      []corev1.Taint
	// want is how many times each taint key is on the admitted Node.
	want map[string]int
}

// TestWebhookPolicyEquivalence: for the same inputs, the webhook (served in-process over
// real TLS, registered from deploy/base/webhook.yaml) and the MutatingAdmissionPolicy
// (evaluated inside the real apiserver) must produce identical Nodes.
func TestWebhookPolicyEquivalence(t *testing.T) {
	foreign := corev1.Taint{Key: "example.com/other", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	registered := corev1.Taint{Key: config.DefaultTaintKey, Value: "karpenter", Effect: corev1.TaintEffectNoSchedule}
	one := map[string]int{config.DefaultTaintKey: 1}
	none := map[string]int{config.DefaultTaintKey: 0}
	checkEquivalence(t, "equivalence", config.DefaultConfig(), []equivInput{
		{name: "no-taints", want: one},
		{name: "other-taints", taints: []corev1.Taint{foreign}, want: one},
		{name: "taint-present", taints: []corev1.Taint{registered, foreign}, want: one},
		{name: "excluded-system", labels: map[string]string{"kubernetes.azure.com/mode": "system"}, want: none},
		{name: "excluded-control-plane", labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}, want: none},
		{name: "already-released", annotations: map[string]string{config.DefaultCompletedAnnotation: "1"}, want: none},
	})
}

// TestWebhookPolicyEquivalenceRules: the same for the shipped example rules
// (deploy/examples/rules.yaml): init on every gated node, the GPU driver on the GPU pool,
// CNI on every gated node, a dry-run storage rule. A node matched by one rule and not another gets
// exactly its rules' taints, either way, and the dry-run rule's never.
func TestWebhookPolicyEquivalenceRules(t *testing.T) {
	raw, err := os.ReadFile("../deploy/examples/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	const gpu, cni, csi = "startup.k8s.io/gpu-initializing", "startup.k8s.io/cni-unready", "startup.k8s.io/csi-initializing"
	taints := func(init, g, c int) map[string]int {
		return map[string]int{config.DefaultTaintKey: init, gpu: g, cni: c, csi: 0}
	}
	nvidia := map[string]string{"accelerator": "nvidia"}
	checkEquivalence(t, "equivalence-rules", cfg, []equivInput{
		{name: "cpu", want: taints(1, 0, 1)},
		{name: "gpu", labels: nvidia, want: taints(1, 1, 1)},
		{name: "gpu-registered-with-its-taint", labels: nvidia, taints: []corev1.Taint{{Key: gpu, Value: "karpenter", Effect: corev1.TaintEffectNoSchedule}}, want: taints(1, 1, 1)},
		{name: "system", labels: map[string]string{"kubernetes.azure.com/mode": "system", "accelerator": "nvidia"}, want: taints(0, 0, 0)},
		{name: "storage-dry-run", labels: map[string]string{"storage": "csi"}, want: taints(1, 0, 1)},
		{name: "init-released", labels: nvidia, annotations: map[string]string{config.DefaultCompletedAnnotation: "1"}, want: taints(0, 1, 1)},
		{name: "gpu-released", labels: nvidia, annotations: map[string]string{
			config.DefaultCompletedAnnotation + "." + rule.RecordName(corev1.Taint{Key: gpu, Effect: corev1.TaintEffectNoSchedule}): "1"}, want: taints(1, 0, 1)},
	})
}

// checkEquivalence registers each input through the webhook and through the policy, with
// cfg scoped to the scenario name, and requires identical Nodes with the wanted taints.
// The taint list is compared as a set: the webhook adds the rules' taints in rule order,
// the apiserver runs one policy per rule in its own order, and the order of taints means
// nothing to the scheduler.
func checkEquivalence(t *testing.T, name string, cfg config.Config, inputs []equivInput) {
	t.Helper()
	rc := sharedPlane(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	cfg = scenario.ScopeConfig(cfg, name)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	webhook := admitAll(t, rc, cs, gateundertest.InProcess, cfg, name, inputs)
	policy := admitAll(t, rc, cs, gateundertest.Policy, cfg, name, inputs)
	byKey := cmpopts.SortSlices(func(a, b corev1.Taint) bool { return a.Key < b.Key })
	for _, in := range inputs {
		w, p := webhook[in.name], policy[in.name]
		if diff := cmp.Diff(w.Spec, p.Spec, byKey); diff != "" {
			t.Errorf("%s: spec differs (-webhook +policy):\n%s", in.name, diff)
		}
		if diff := cmp.Diff(w.Labels, p.Labels); diff != "" {
			t.Errorf("%s: labels differ (-webhook +policy):\n%s", in.name, diff)
		}
		if diff := cmp.Diff(w.Annotations, p.Annotations); diff != "" {
			t.Errorf("%s: annotations differ (-webhook +policy):\n%s", in.name, diff)
		}
		for key, want := range in.want {
			if n := countKey(w, key); n != want {
				t.Errorf("%s: %d taints %s, want %d (taints %v)", in.name, n, key, want, w.Spec.Taints)
			}
		}
		t.Logf("%s: taints %v", in.name, w.Spec.Taints)
	}
}

// admitAll creates each input through a gate in mode, deletes it again, and returns the
// Nodes as the apiserver stored them.
func admitAll(t *testing.T, rc *rest.Config, cs kubernetes.Interface, mode gateundertest.Mode, cfg config.Config, name string, inputs []equivInput) map[string]*corev1.Node {
	t.Helper()
	ctx := context.Background()
	g := gateundertest.New(rc, cs, mode, cfg, &scenario.Scenario{Name: name}, "default", gateundertest.Options{})
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	if err := g.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Node{}
	for _, in := range inputs {
		lbls := map[string]string{scenario.Label: name}
		for k, v := range in.labels {
			lbls[k] = v
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + in.name, Labels: lbls, Annotations: in.annotations},
			Spec:       corev1.NodeSpec{Taints: in.taints},
		}
		got, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: creating %s: %v", mode, in.name, err)
		}
		out[in.name] = got
		if err := cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

func countKey(n *corev1.Node, key string) int {
	c := 0
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			c++
		}
	}
	return c
}

// TestReleaseKeepsForeignTaint races a foreign taint writer against the release on a real
// apiserver: between the gate's read and its write, another controller adds a taint. The
// resourceVersion guard must turn that into a conflict, and the retry must keep the taint.
func TestReleaseKeepsForeignTaint(t *testing.T) {
	rc := sharedPlane(t)
	ctx := context.Background()
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	apiClient, err := client.NewWithWatch(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "release-race"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{cfg.Taint}},
	}
	if err := apiClient.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = apiClient.Delete(context.Background(), node) })

	foreign := corev1.Taint{Key: "example.com/foreign", Effect: corev1.TaintEffectNoSchedule}
	var patches atomic.Int32
	racing := interceptor.NewClient(apiClient, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patches.Add(1) == 1 {
				// Another controller writes first. Its own write may conflict with the
				// node-lifecycle controller's, so it retries like any controller would.
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					n := &corev1.Node{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), n); err != nil {
						return err
					}
					n.Spec.Taints = append(n.Spec.Taints, foreign)
					return c.Update(ctx, n)
				})
				if err != nil {
					t.Errorf("foreign writer: %v", err)
					return err
				}
			}
			err := c.Patch(ctx, obj, patch, opts...)
			if patches.Load() == 1 && !apierrors.IsConflict(err) {
				t.Errorf("first patch: want a conflict from the apiserver, got %v", err)
			}
			return err
		},
	})
	released, err := gate.ReleaseNodes(ctx, racing, &cfg, time.Unix(1700000000, 0), node.Name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{node.Name}, released); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
	got := &corev1.Node{}
	if err := apiClient.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tt := range got.Spec.Taints {
		if !strings.HasPrefix(tt.Key, "node.kubernetes.io/") { // the lifecycle's own
			keys = append(keys, tt.Key)
		}
	}
	if diff := cmp.Diff([]string{foreign.Key}, keys); diff != "" {
		t.Errorf("taints after release (-want +got):\n%s", diff)
	}
	if v := got.Annotations[cfg.CompletedAnnotation]; v != "1700000000" {
		t.Errorf("completedAt = %q, want 1700000000", v)
	}
	if n := patches.Load(); n < 2 {
		t.Errorf("patches = %d, want at least 2 (a conflict, then a success)", n)
	}
}

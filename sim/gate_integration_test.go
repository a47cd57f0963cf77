package sim

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestWebhookPolicyEquivalence: for the same inputs, the webhook (served in-process over
// real TLS, registered from deploy/base/webhook.yaml) and the MutatingAdmissionPolicy
// (evaluated inside the real apiserver) must produce identical Nodes.
func TestWebhookPolicyEquivalence(t *testing.T) {
	rc := sharedPlane(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	const name = "equivalence"

	cfg := gate.DefaultConfig()
	cfg.NodeSelector += "," + scenario.Label + "=" + name
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	foreign := corev1.Taint{Key: "example.com/other", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	registered := corev1.Taint{Key: gate.DefaultTaintKey, Value: "karpenter", Effect: corev1.TaintEffectNoSchedule}
	inputs := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		taints      []corev1.Taint
		gateTaints  int
	}{
		{name: "no-taints", gateTaints: 1},
		{name: "other-taints", taints: []corev1.Taint{foreign}, gateTaints: 1},
		{name: "taint-present", taints: []corev1.Taint{registered, foreign}, gateTaints: 1},
		{name: "excluded-system", labels: map[string]string{"kubernetes.azure.com/mode": "system"}},
		{name: "excluded-control-plane", labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		{name: "already-released", annotations: map[string]string{gate.DefaultCompletedAnnotation: "1"}},
	}

	admit := func(mode gateundertest.Mode) map[string]*corev1.Node {
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
				ObjectMeta: metav1.ObjectMeta{Name: "equiv-" + in.name, Labels: lbls, Annotations: in.annotations},
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
	webhook := admit(gateundertest.InProcess)
	policy := admit(gateundertest.Policy)

	for _, in := range inputs {
		w, p := webhook[in.name], policy[in.name]
		if diff := cmp.Diff(w.Spec, p.Spec); diff != "" {
			t.Errorf("%s: spec differs (-webhook +policy):\n%s", in.name, diff)
		}
		if diff := cmp.Diff(w.Labels, p.Labels); diff != "" {
			t.Errorf("%s: labels differ (-webhook +policy):\n%s", in.name, diff)
		}
		if diff := cmp.Diff(w.Annotations, p.Annotations); diff != "" {
			t.Errorf("%s: annotations differ (-webhook +policy):\n%s", in.name, diff)
		}
		if n := countTaint(w, &cfg); n != in.gateTaints {
			t.Errorf("%s: %d gate taints, want %d", in.name, n, in.gateTaints)
		}
		t.Logf("%s: taints %v", in.name, w.Spec.Taints)
	}
}

func countTaint(n *corev1.Node, cfg *gate.Config) int {
	c := 0
	for _, t := range n.Spec.Taints {
		if t.Key == cfg.Taint.Key && t.Effect == cfg.Taint.Effect {
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
	cfg := gate.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	real, err := client.NewWithWatch(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "release-race"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{cfg.Taint}},
	}
	if err := real.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = real.Delete(context.Background(), node) })

	foreign := corev1.Taint{Key: "example.com/foreign", Effect: corev1.TaintEffectNoSchedule}
	var patches atomic.Int32
	racing := interceptor.NewClient(real, interceptor.Funcs{
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
	if err := real.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
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

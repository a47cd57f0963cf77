package gateundertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/startupgate/startupgate/gate/config"
)

// The floor is a yardstick, but it must still be a correct release: only the gate's taint
// goes, every other taint stays, and the write is guarded by the version it was computed from.
func TestFloorPatch(t *testing.T) {
	cfg := config.DefaultConfig()
	foreign := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "42"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{foreign, cfg.Taint}},
	}
	raw, err := floorPatch(n, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Taints []corev1.Taint `json:"taints"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.ResourceVersion != "42" {
		t.Errorf("resourceVersion %q, want 42 (the write must be guarded)", p.Metadata.ResourceVersion)
	}
	if p.Metadata.Annotations[cfg.CompletedAnnotation] == "" {
		t.Errorf("no %s annotation: the recorder would never count the release", cfg.CompletedAnnotation)
	}
	if len(p.Spec.Taints) != 1 || p.Spec.Taints[0].Key != foreign.Key {
		t.Errorf("taints %v, want only the foreign one", p.Spec.Taints)
	}
	// An empty list must be written as [], not null-and-omitted: a merge patch without the
	// field would leave the gate's taint in place.
	n.Spec.Taints = []corev1.Taint{cfg.Taint}
	raw, _ = floorPatch(n, &cfg)
	if want := `"taints":[]`; !json.Valid(raw) || !strings.Contains(string(raw), want) {
		t.Errorf("patch %s does not contain %s", raw, want)
	}
}

// TestFloorReleasesWhicheverArrivesLast: the floor releases a node whether its Ready init Pod
// reaches the floor before the node or after it (a floor started after the join lists both
// at once, in either order), and a write that fails with a timeout is tried again.
func TestFloorReleasesWhicheverArrivesLast(t *testing.T) {
	for _, podFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("pod first %v", podFirst), func(t *testing.T) {
			cfg := config.DefaultConfig()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{cfg.Taint}}}
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "init-n", Namespace: "ns"},
				Spec:       corev1.PodSpec{NodeName: "n"},
				Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			}
			cs := fake.NewClientset(n)
			var patches atomic.Int32
			cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if patches.Add(1) == 1 {
					return true, nil, apierrors.NewTimeoutError("busy plane", 1)
				}
				return false, nil, nil
			})
			nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byNode: podNode})
			f := &floor{cs: cs, cfg: &cfg, nodes: listersv1.NewNodeLister(nodes), pods: pods, done: map[types.UID]bool{}}
			ctx := t.Context()
			if podFirst {
				_ = pods.Add(p)
				f.pod(ctx, p)
				_ = nodes.Add(n)
				f.node(ctx, n)
			} else {
				_ = nodes.Add(n)
				f.node(ctx, n)
				_ = pods.Add(p)
				f.pod(ctx, p)
			}
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
				return err == nil && !cfg.HasTaint(got), nil
			})
			if err != nil {
				t.Fatalf("node still tainted after %d patches: %v", patches.Load(), err)
			}
			if got := patches.Load(); got != 2 {
				t.Errorf("%d patches, want 2 (one timed out, one released)", got)
			}
		})
	}
}

package gate

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// TestNewCachedLabels: the rules' keys and Karpenter's are always kept, the extra keys
// too, and AllLabels keeps every label.
func TestNewCachedLabels(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) { c.NodeSelector = "pool in (a,b),!node-role.kubernetes.io/control-plane" })
	keep := NewCachedLabels(cfg, []string{"kubernetes.io/os"})
	for key, want := range map[string]bool{"pool": true, "node-role.kubernetes.io/control-plane": true, rule.KarpenterRegisteredLabel: true,
		rule.KarpenterInitializedLabel: true, "kubernetes.io/os": true, "kubernetes.io/hostname": false, "gpu": false} {
		if got := keep.Keeps(key); got != want {
			t.Errorf("Keeps(%q) = %v, want %v", key, got, want)
		}
	}
	if all := NewCachedLabels(cfg, []string{"gpu", AllLabels}); all != nil || !all.Keeps("kubernetes.io/hostname") {
		t.Errorf("with %q: %v, want every label kept", AllLabels, all)
	}
}

// TestReconcileReadsLabelsTheCacheLacks: a GPU node whose driver DaemonSet selects it by a
// label the cache does not keep is held for the driver, as the apiserver's copy of the node
// says, with one read of the node per reconcile; the cached copy alone would release it
// once the general component is ready.
func TestReconcileReadsLabelsTheCacheLacks(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Components = []rule.Component{
			{Name: "init", Selector: "startup.k8s.io/component=init"},
			{Name: "gpu", Selector: "startup.k8s.io/component=gpu"},
		}
	})
	driver := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "driver", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": "gpu"}},
			Spec:       corev1.PodSpec{NodeSelector: map[string]string{"gpu": "true"}}}}}
	tests := []struct {
		name        string
		labels      CachedLabels
		apiLabel    bool // the apiserver's copy has gpu=true; the cache's never has
		wantRelease bool
		wantReads   int
	}{
		{"the label is on the node: held for the driver", NewCachedLabels(cfg, nil), true, false, 1},
		{"the label is not on the node: released", NewCachedLabels(cfg, nil), false, true, 1},
		{"the cache keeps every label: no read", nil, true, true, 0},
		{"the cache keeps the label: no read", NewCachedLabels(cfg, []string{"gpu"}), true, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cached := testobj.Node("g", t0, testobj.Taints(gateTaint))
			init := testobj.Pod("init-g", "g", t0.Add(time.Second), testobj.ReadyAt(t0.Add(time.Minute)))
			e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, cached, init, driver)
			live := cached.DeepCopy()
			if tt.apiLabel {
				live.Labels = map[string]string{"gpu": "true"}
			}
			api, reads := newFakeClient(interceptor.Funcs{}, live)
			e.r.Reader, e.r.Labels = api, tt.labels
			e.reconcile(t, "g")
			released := !cfg.HasTaint(getNode(t, e.c, "g"))
			if released != tt.wantRelease {
				t.Errorf("released: %v, want %v", released, tt.wantRelease)
			}
			if got := reads.reads(); got != tt.wantReads {
				t.Errorf("%d reads from the apiserver, want %d", got, tt.wantReads)
			}
		})
	}
}

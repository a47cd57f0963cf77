package gate

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// TestTaintBackAtRegistration: Karpenter registered a node the gate had released (it was
// slow, or restarting) and wrote its NodePool's startupTaints, the gate's taint among them,
// back onto it. The gate takes its taint off again in one write and keeps the first
// completion; on an initialized node, where the taint is an operator's, it writes nothing.
func TestTaintBackAtRegistration(t *testing.T) {
	for _, tt := range []struct {
		name        string
		initialized bool
		wantWrites  int
	}{
		{name: "registered, not initialized", wantWrites: 1},
		{name: "initialized: an operator's taint", initialized: true, wantWrites: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:1] })
			rl := cfg.EffectiveRules()[0]
			opts := []testobj.NodeOpt{testobj.Taints(gateTaint), testobj.NodeAnnotation(rl.CompletedAnnotation, "1"),
				testobj.NodeLabel(rule.KarpenterRegisteredLabel, "true")}
			if tt.initialized {
				opts = append(opts, testobj.NodeLabel(rule.KarpenterInitializedLabel, "true"))
			}
			node := testobj.Node("n", t0, opts...)
			e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node, componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))))
			e.reconcile(t, "n")
			n := getNode(t, e.c, "n")
			if w := e.calls.writes(); w != tt.wantWrites {
				t.Fatalf("%d writes, want %d; taints %v", w, tt.wantWrites, n.Spec.Taints)
			}
			if rl.HasTaint(n) == (tt.wantWrites == 1) {
				t.Errorf("taints %v after %d writes", n.Spec.Taints, tt.wantWrites)
			}
			if n.Annotations[rl.CompletedAnnotation] != "1" {
				t.Errorf("completion %q, want the first release's kept", n.Annotations[rl.CompletedAnnotation])
			}
		})
	}
}

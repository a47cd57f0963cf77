package gate

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/internal/testobj"
)

// TestOldestHeld: a node held since the first reconcile ages with the clock, a second node
// held later does not lower it, the rule reads 0 once both are released, and a dry-run
// rule's would-be hold is not a hold.
func TestOldestHeld(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(*config.Config) {})
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("n1", t0, testobj.Taints(gateTaint)), testobj.Pod("init-n1", "n1", t0.Add(time.Second)),
		testobj.Node("n2", t0, testobj.Taints(gateTaint)), testobj.Pod("init-n2", "n2", t0.Add(time.Second)))
	age := func() time.Duration { return e.r.oldestHeld(e.clock.Now())[cfg.EffectiveRules()[0].Name] }

	e.reconcile(t, "n1")
	e.clock.Step(10 * time.Minute)
	e.reconcile(t, "n2")
	e.clock.Step(time.Minute)
	if got := age(); got != 11*time.Minute {
		t.Errorf("oldest hold %s, want 11m (n1's)", got)
	}
	for _, name := range []string{"n1", "n2"} {
		pod := &corev1.Pod{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "init-" + name}, pod); err != nil {
			t.Fatal(err)
		}
		testobj.ReadyAt(e.clock.Now())(pod)
		if err := e.c.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		e.reconcile(t, name)
	}
	if got := age(); got != 0 {
		t.Errorf("oldest hold %s after both releases, want 0", got)
	}

	dry := testobj.ValidConfig(t, func(c *config.Config) { c.Rules = nil })
	dry.EffectiveRules()[0].DryRun = true
	d := newReconcilerEnv(t, dry, false, interceptor.Funcs{}, testobj.Node("n3", t0, testobj.Taints(gateTaint)))
	d.reconcile(t, "n3")
	d.clock.Step(time.Hour)
	if got := d.r.oldestHeld(d.clock.Now())[dry.EffectiveRules()[0].Name]; got != 0 {
		t.Errorf("a dry run's would-be hold counted: %s", got)
	}
}

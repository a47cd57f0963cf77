package gate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/internal/testobj"
)

// suspendAll suspends every rule of rulesConfig.
func suspendAll(c *config.Config) {
	for i := range c.Rules {
		c.Rules[i].Suspend = true
	}
}

// TestSuspendedRuleAddsNothingAtCreation: neither the webhook's mutation nor the policy
// taints a node for a suspended rule; the other rules still do.
func TestSuspendedRuleAddsNothingAtCreation(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules[1].Suspend = true }) // gpu
	n := testobj.Node("g", t0, testobj.NodeLabel("pool", "gpu"))
	cfg.Admit(n)
	if diff := cmp.Diff([]corev1.Taint{gateTaint, cniTaint}, n.Spec.Taints); diff != "" {
		t.Errorf("taints after admission (-want +got):\n%s", diff)
	}
	objs, err := policy.For(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The suspended gpu rule and the dry-run shadow rule render policies that never
	// match, so that an apply overwrites whatever policy they had before.
	var writing []string
	for _, o := range objs {
		never := false
		for _, mc := range o.Policy.Spec.MatchConditions {
			never = never || mc.Expression == "false"
		}
		if !never {
			writing = append(writing, o.Policy.Name)
		}
	}
	if diff := cmp.Diff([]string{policy.Name, policy.Name + "-cni"}, writing); diff != "" {
		t.Errorf("policies that mutate (-want +got):\n%s", diff)
	}
	if cfg.Gated(testobj.Node("x", t0, testobj.NodeLabel("pool", "gpu"))) != true {
		t.Errorf("Gated() of a node the running default and cni rules apply to = false, want true")
	}
	all := rulesConfig(t, suspendAll)
	if all.Gated(testobj.Node("y", t0)) {
		t.Errorf("Gated() with every rule suspended = true, want false")
	}
}

// TestSuspendedRuleWritesNothing: a suspended rule holds its nodes and writes nothing,
// however ready they are: no release, no re-taint, no backfill; it says so once with a
// Warning event. Fail safe: suspending never releases.
func TestSuspendedRuleWritesNothing(t *testing.T) {
	cfg := rulesConfig(t, suspendAll)
	e := newReconcilerEnv(t, cfg, true, interceptor.Funcs{},
		// Held, with every component ready: a running gate would release it.
		testobj.Node("held", t0, testobj.NodeLabel("pool", "gpu"), testobj.Taints(gateTaint, gpuRuleTaint, cniTaint)),
		componentPod("init-held", "held", "init", testobj.ReadyAt(t0.Add(time.Minute))),
		componentPod("gpu-held", "held", "gpu-driver", testobj.ReadyAt(t0.Add(time.Minute))),
		componentPod("cni-held", "held", "cni", testobj.ReadyAt(t0.Add(time.Minute))),
		// Released by every rule, its CNI Pod no longer ready: a running cni rule re-taints.
		testobj.Node("released", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"),
			testobj.NodeAnnotation(cniDone, "1")),
		componentPod("cni-released", "released", "cni"),
		// Came up untainted while idle: a running gate backfills it.
		testobj.Node("untainted", t0),
		// The gpu rule's key outside its selector (put there by hand): not the rule's to
		// hold, so it says nothing of it.
		testobj.Node("foreign", t0, testobj.Taints(gpuRuleTaint)))
	before := gaugeValue(t, "startupgate_rule_suspended", "rule", "gpu")
	RecordRules(cfg)
	if v := gaugeValue(t, "startupgate_rule_suspended", "rule", "gpu"); v != 1 {
		t.Errorf("startupgate_rule_suspended{rule=gpu} = %v (before %v), want 1", v, before)
	}
	for range 2 {
		for _, name := range []string{"held", "released", "untainted", "foreign"} {
			e.reconcile(t, name)
		}
		e.clock.Step(time.Minute) // past every settle time
	}
	if w := e.calls.writes(); w != 0 {
		t.Errorf("%d writes by suspended rules, want 0", w)
	}
	if n := getNode(t, e.c, "held"); len(n.Spec.Taints) != 3 {
		t.Errorf("held node's taints = %v, want all three kept", n.Spec.Taints)
	}
	want := []string{"Warning " + ReasonSuspended, "Warning " + ReasonSuspended, "Warning " + ReasonSuspended}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events: one per rule holding the node, once (-want +got):\n%s", diff)
	}

	// Resumed (the gate restarted with the rule running again): the held node is decided
	// at once and released.
	resumed := rulesConfig(t, nil)
	e.r.Config = resumed
	e.reconcile(t, "held")
	if n := getNode(t, e.c, "held"); len(n.Spec.Taints) != 0 {
		t.Errorf("after resume, held node's taints = %v, want none", n.Spec.Taints)
	}
}

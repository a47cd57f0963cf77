package gate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

var oosTaint = corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

// oosMark is the condition rule's mark of its taint, under the taint's record.
var oosMark = config.DefaultTaintedAnnotation + "." + rule.RecordName(oosTaint)

// conditionConfig: the default startup rule, and an out-of-service condition rule on a
// preempted node that is not Ready.
func conditionConfig(t *testing.T, mod func(*rule.Rule)) *config.Config {
	t.Helper()
	return testobj.ValidConfig(t, func(c *config.Config) {
		oos := rule.Rule{Name: "oos", Mode: rule.Condition, Taint: oosTaint, Match: []rule.Match{
			{Type: "example.com/Preempted", Status: "True"}, {Type: corev1.NodeReady, Status: "False|Unknown"},
		}}
		if mod != nil {
			mod(&oos)
		}
		c.Rules = []rule.Rule{
			{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}},
			oos,
		}
	})
}

func preempted(since time.Time) testobj.NodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions,
			corev1.NodeCondition{Type: "example.com/Preempted", Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)},
			corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(since)})
	}
}

const releasedMark = config.DefaultCompletedAnnotation

// TestConditionRuleTaintsWhileMatching: never at creation; on while every condition
// matches, with timeAdded and the rule's mark, in one write; off, mark and all, when a
// condition clears.
func TestConditionRuleTaintsWhileMatching(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.MaxTainted = &intstr.IntOrString{Type: intstr.Int, IntVal: 5} })
	created := testobj.Node("n", t0)
	if applies, _ := cfg.Admit(created.DeepCopy()); len(applies) != 1 || applies[0].Name != config.DefaultRuleName {
		t.Fatalf("rules applied at creation: %v, want the startup rule only", ruleNames(applies))
	}
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0.Add(time.Minute))))
	e.reconcile(t, "n")
	n := getNode(t, e.c, "n")
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != oosTaint.Key || n.Spec.Taints[0].TimeAdded == nil {
		t.Fatalf("taints %+v, want the out-of-service taint with timeAdded", n.Spec.Taints)
	}
	if n.Annotations[oosMark] == "" {
		t.Errorf("annotations %v: want the rule's mark", n.Annotations)
	}
	e.reconcile(t, "n") // matching still, tainted: nothing to do
	if w := e.calls.writes(); w != 1 {
		t.Errorf("%d writes, want 1", w)
	}

	n.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := e.c.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, e.c, "n").Status.Conditions[0].Status; got != corev1.ConditionFalse {
		t.Fatalf("condition after update = %s", got)
	}
	e.reconcile(t, "n")
	n = getNode(t, e.c, "n")
	if len(n.Spec.Taints) != 0 || n.Annotations[oosMark] != "" {
		t.Errorf("after the condition cleared: taints %v, annotations %v; want neither taint nor mark", n.Spec.Taints, n.Annotations)
	}
	want := []string{"Warning " + ReasonConditionTainted, "Normal " + ReasonConditionCleared}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestConditionWritesRecheckTheConditions: the kubelet changes the node's conditions between
// the gate's read and its write (a conflict, then a fresh read). A taint decided on a match
// must not go onto a node whose conditions no longer match, and a clear decided on a
// mismatch must not take the taint off a node that matches again: the decision is made
// again on the fresh read, not just its write.
func TestConditionWritesRecheckTheConditions(t *testing.T) {
	cfg := conditionConfig(t, nil)
	mark := testobj.NodeAnnotation(oosMark, "1")
	recovered := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		edit      func(*corev1.Node)
		wantTaint bool
	}{
		{"taint, the match gone", testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)), recovered, false},
		{"clear, the match back", testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), mark, testobj.Taints(oosTaint), preempted(t0), recovered),
			func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue }, true},
		{"taint, still matching", testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)),
			func(n *corev1.Node) { n.Status.Conditions[1].Reason = "heartbeat" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReconcilerEnv(t, cfg, false, kubeletWritesFirst(tc.edit), tc.node)
			e.reconcile(t, "n")
			if n := getNode(t, e.c, "n"); cfg.EffectiveRules()[1].HasTaint(n) != tc.wantTaint {
				t.Errorf("taints %v with conditions %v; want the taint: %t", n.Spec.Taints, n.Status.Conditions, tc.wantTaint)
			}
		})
	}
}

// TestConditionLeftSelectorRechecks: a condition rule takes its taint off a node that left
// its selector; when the label is back before the write (a conflict, then the fresh read),
// the write is decided again there: the taint stays while the conditions match, comes off
// as a cleared condition when they do not, and the event says which.
func TestConditionLeftSelectorRechecks(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.NodeSelector = "pool=spot" })
	back := func() interceptor.Funcs {
		return writesFirst(false, func(n *corev1.Node) { n.Labels["pool"] = "spot" })
	}
	stays := func() interceptor.Funcs { return interceptor.Funcs{} }
	recovered := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	for _, tc := range []struct {
		name       string
		funcs      func() interceptor.Funcs
		conditions testobj.NodeOpt
		wantTaint  bool
		wantEvents []string
	}{
		{"left", stays, preempted(t0), false, []string{"Normal " + ReasonLeftSelector}},
		{"back, matching", back, preempted(t0), true, nil},
		{"back, not matching", back, func(n *corev1.Node) { preempted(t0)(n); recovered(n) }, false, []string{"Normal " + ReasonConditionCleared}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), testobj.NodeAnnotation(oosMark, "1"),
				testobj.Taints(oosTaint), tc.conditions)
			e := newReconcilerEnv(t, cfg, false, tc.funcs(), node)
			e.reconcile(t, "n")
			if n := getNode(t, e.c, "n"); cfg.EffectiveRules()[1].HasTaint(n) != tc.wantTaint {
				t.Errorf("taints %v, labels %v; want the taint: %t", n.Spec.Taints, n.Labels, tc.wantTaint)
			}
			if diff := cmp.Diff(tc.wantEvents, e.drain()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConditionRuleNeverLiftsAForeignTaint: an operator's own out-of-service taint (the
// manual flow) stays when the rule's conditions do not match.
func TestConditionRuleNeverLiftsAForeignTaint(t *testing.T) {
	e := newReconcilerEnv(t, conditionConfig(t, nil), false, interceptor.Funcs{},
		testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), testobj.Taints(oosTaint)))
	e.reconcile(t, "n")
	if w := e.calls.writes(); w != 0 {
		t.Errorf("%d writes, want 0: the rule did not place the taint", w)
	}
}

// TestConditionBudget: four of ten nodes match and the budget is 10%: one node is tainted,
// the earliest match; the others wait, each reported once, and nothing is lifted for them.
func TestConditionBudget(t *testing.T) {
	cfg := conditionConfig(t, nil) // default budget, 10%
	var objs []client.Object
	for i := range 10 {
		opts := []testobj.NodeOpt{testobj.NodeAnnotation(releasedMark, "1")}
		if i < 4 {
			opts = append(opts, preempted(t0.Add(time.Duration(4-i)*time.Second))) // n3 matched first
		}
		objs = append(objs, testobj.Node(fmt.Sprintf("n%d", i), t0, opts...))
	}
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, objs...)
	for round := range 2 {
		for i := range 4 {
			got := e.reconcile(t, fmt.Sprintf("n%d", i))
			if tainted := i == 3; !tainted && got.RequeueAfter != budgetRetry {
				t.Errorf("round %d, n%d: %+v, want a retry after %s", round, i, got, budgetRetry)
			}
		}
	}
	for i := range 10 {
		if has := cfg.EffectiveRules()[1].HasTaint(getNode(t, e.c, fmt.Sprintf("n%d", i))); has != (i == 3) {
			t.Errorf("n%d tainted = %v, want %v", i, has, i == 3)
		}
	}
	want := []string{"Warning " + ReasonBudgetExhausted, "Warning " + ReasonBudgetExhausted, "Warning " + ReasonBudgetExhausted, "Warning " + ReasonConditionTainted}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if v := gaugeValue(t, "startupgate_budget_exhausted", "rule", "oos"); v != 1 {
		t.Errorf("budget_exhausted{rule=oos} = %v, want 1", v)
	}
}

// TestConditionBudgetCountsWritesTheCacheLags: the budget counts a taint this process
// wrote before the cache shows it; else a second worker would take the same place.
func TestConditionBudgetCountsWritesTheCacheLags(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.MaxTainted = &intstr.IntOrString{Type: intstr.Int, IntVal: 1} })
	objs := func() []client.Object {
		return []client.Object{
			testobj.Node("a", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)),
			testobj.Node("b", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)),
		}
	}
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, objs()...)
	stale, _ := newFakeClient(interceptor.Funcs{}, objs()...) // a cache that never sees a write
	e.r.Client = stale
	e.reconcile(t, "a")
	e.reconcile(t, "b")
	if w := e.calls.writes(); w != 1 {
		t.Errorf("%d writes, want 1: the budget is one node", w)
	}
}

// TestConditionBudgetHoldsWhenALateViewReorders: a view that shows a node's match late
// reorders the queue. a and b are tainted while the stale cache shows only them matching;
// then it shows c, which matched first, and still not the two taints. c sorts ahead of a
// and b, so counting their taints from their place in the queue would let c take a third
// place in a budget of two (explore, stale-node-view on noexecute-budget).
func TestConditionBudgetHoldsWhenALateViewReorders(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.MaxTainted = &intstr.IntOrString{Type: intstr.Int, IntVal: 2} })
	objs := func(cMatches bool) []client.Object {
		c := []testobj.NodeOpt{testobj.NodeAnnotation(releasedMark, "1")}
		if cMatches {
			c = append(c, preempted(t0))
		}
		return []client.Object{
			testobj.Node("a", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0.Add(time.Second))),
			testobj.Node("b", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0.Add(time.Second))),
			testobj.Node("c", t0, c...),
		}
	}
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, objs(true)...)
	stale, _ := newFakeClient(interceptor.Funcs{}, objs(false)...) // c's match not seen yet, nor any write
	e.r.Client = stale
	e.reconcile(t, "a")
	e.reconcile(t, "b")
	late, _ := newFakeClient(interceptor.Funcs{}, objs(true)...) // now c's match, still no taint
	e.r.Client = late
	if got := e.reconcile(t, "c"); got.RequeueAfter != budgetRetry {
		t.Errorf("c: %+v, want a retry after %s: a and b hold the budget", got, budgetRetry)
	}
	oos := cfg.EffectiveRules()[1]
	for _, name := range []string{"a", "b", "c"} {
		if has, want := oos.HasTaint(getNode(t, e.c, name)), name != "c"; has != want {
			t.Errorf("%s tainted = %v, want %v", name, has, want)
		}
	}
}

// TestConditionBudgetKeepsATaintPutBack: a taint of the ledger that someone took off is
// put back without asking the budget, and the ledger keeps that latest write. Keeping the
// first write's version instead, a cache that caught up with the removal would drop the
// entry while the taint is on again, and let another node take the place.
func TestConditionBudgetKeepsATaintPutBack(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.MaxTainted = &intstr.IntOrString{Type: intstr.Int, IntVal: 1} })
	oos := cfg.EffectiveRules()[1]
	a := testobj.Node("a", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0.Add(time.Second)))
	b := testobj.Node("b", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)) // matched first
	bUnseen := testobj.Node("b", t0, testobj.NodeAnnotation(releasedMark, "1"))
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, a.DeepCopy(), b.DeepCopy())
	stale, _ := newFakeClient(interceptor.Funcs{}, a.DeepCopy(), bUnseen) // b's match not seen yet
	e.r.Client = stale
	e.reconcile(t, "a")
	// Another writer takes the taint off; the stale cache shows neither write.
	off := getNode(t, e.c, "a")
	off.Spec.Taints = nil
	if err := e.c.Update(t.Context(), off); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "a") // put back
	if !oos.HasTaint(getNode(t, e.c, "a")) {
		t.Fatal("a's taint not put back")
	}
	// The cache catches up with the removal (not yet the taint put back), and shows b's match.
	late, _ := newFakeClient(interceptor.Funcs{}, off.DeepCopy(), b.DeepCopy())
	e.r.Client = late
	if got := e.reconcile(t, "b"); got.RequeueAfter != budgetRetry || oos.HasTaint(getNode(t, e.c, "b")) {
		t.Errorf("b: %+v, tainted %v; want it held back: a's taint is on again and holds the one place", got, oos.HasTaint(getNode(t, e.c, "b")))
	}
}

// TestConditionClearLeavesTheLedger: a taint the rule took off no longer counts in the
// budget, though the cache has seen neither the taint nor its removal.
func TestConditionClearLeavesTheLedger(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.MaxTainted = &intstr.IntOrString{Type: intstr.Int, IntVal: 1} })
	a := testobj.Node("a", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0))
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, a.DeepCopy())
	stale, _ := newFakeClient(interceptor.Funcs{}, a.DeepCopy())
	e.r.Client = stale
	e.reconcile(t, "a")
	if !e.r.tainting.pending("oos", a, false) {
		t.Fatal("a's taint not in the ledger")
	}
	cleared := getNode(t, e.c, "a")
	cleared.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := e.c.Status().Update(t.Context(), cleared); err != nil {
		t.Fatal(err)
	}
	e.r.Client = e.c // the cache shows the taint and the cleared condition
	e.reconcile(t, "a")
	if cfg.EffectiveRules()[1].HasTaint(getNode(t, e.c, "a")) {
		t.Fatal("a still tainted after its condition cleared")
	}
	if e.r.tainting.pending("oos", a, false) {
		t.Error("a's taint, taken off, still counts in the budget")
	}
}

// TestConditionDryRunReportsEvictions: a dry-run NoExecute rule writes nothing and names the
// Pods its taint would evict, once.
func TestConditionDryRunReportsEvictions(t *testing.T) {
	cfg := conditionConfig(t, func(r *rule.Rule) { r.DryRun = true })
	tolerates := corev1.Toleration{Key: oosTaint.Key, Operator: corev1.TolerationOpExists}
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("n", t0, testobj.NodeAnnotation(releasedMark, "1"), preempted(t0)),
		testobj.Pod("web-0", "n", t0, testobj.Namespace("shop"), testobj.Labels(nil)),
		testobj.Pod("logger", "n", t0, testobj.Namespace("shop"), testobj.Labels(nil), testobj.Tolerations(tolerates)))
	e.reconcile(t, "n")
	e.reconcile(t, "n")
	if w := e.calls.writes(); w != 0 {
		t.Errorf("%d writes, want 0", w)
	}
	var got []string
	for {
		select {
		case ev := <-e.events.Events:
			got = append(got, ev)
			continue
		default:
		}
		break
	}
	if len(got) != 1 || !strings.Contains(got[0], ReasonWouldTaint) || !strings.Contains(got[0], "evicting 1 pod(s): shop/web-0") {
		t.Errorf("events %q, want one %s naming shop/web-0 only", got, ReasonWouldTaint)
	}
}

// TestConditionRuleRunsOnBackfilledNodes: with backfill on, a node that came up without the
// startup taint is backfill's, and a condition rule still decides it. A busy node (backfill
// leaves it alone) that is out of service gets the condition rule's taint, and loses it when
// the condition clears; before, the reconcile returned from backfill and the rule never ran
// on nodes that predate the install.
func TestConditionRuleRunsOnBackfilledNodes(t *testing.T) {
	cfg := conditionConfig(t, nil)
	node := testobj.Node("n", t0, preempted(t0.Add(time.Minute)))
	busy := testobj.Pod("web", "n", t0, testobj.Namespace("default"))
	e := newReconcilerEnv(t, cfg, true, interceptor.Funcs{}, node, busy)
	e.reconcile(t, "n")
	n := getNode(t, e.c, "n")
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != oosTaint.Key {
		t.Fatalf("busy untainted node, out of service, backfill on: taints %+v, want the out-of-service taint only", n.Spec.Taints)
	}
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := e.c.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "n")
	if got := getNode(t, e.c, "n").Spec.Taints; len(got) != 0 {
		t.Errorf("condition cleared: taints %+v, want none", got)
	}
}

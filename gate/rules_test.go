package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

var (
	gpuRuleTaint = corev1.Taint{Key: "example.com/gpu-initializing", Effect: corev1.TaintEffectNoSchedule}
	cniTaint     = corev1.Taint{Key: "example.com/cni-unready", Effect: corev1.TaintEffectNoSchedule}
	shadowTaint  = corev1.Taint{Key: "example.com/shadow", Effect: corev1.TaintEffectNoSchedule}
	// The rules' records, named after their taints (rule.RecordName), as the config keys them.
	gpuDone    = config.DefaultCompletedAnnotation + "." + rule.RecordName(gpuRuleTaint)
	cniDone    = config.DefaultCompletedAnnotation + "." + rule.RecordName(cniTaint)
	shadowDone = config.DefaultCompletedAnnotation + "." + rule.RecordName(shadowTaint)
	gpuPlaced  = rule.DefaultPlacedAnnotation + "." + rule.RecordName(gpuRuleTaint)
)

// rulesConfig: init on every gated node (the default rule, keeping completedAt), the GPU
// driver on the GPU pool, CNI continuous everywhere, and a dry-run rule.
func rulesConfig(t *testing.T, mod func(*config.Config)) *config.Config {
	t.Helper()
	return testobj.ValidConfig(t, func(c *config.Config) {
		c.Rules = []rule.Rule{
			{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}},
			{Name: "gpu", NodeSelector: "pool=gpu", Taint: gpuRuleTaint, Components: []rule.Component{{Name: "gpu-driver", Selector: "startup.k8s.io/component=gpu-driver"}}},
			{Name: "cni", Mode: rule.Continuous, Taint: cniTaint, Components: []rule.Component{{Name: "cni", Selector: "startup.k8s.io/component=cni"}},
				SettleTime: metav1.Duration{Duration: 5 * time.Second}},
			{Name: "shadow", DryRun: true, Taint: shadowTaint, Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}},
		}
		if mod != nil {
			mod(c)
		}
	})
}

func componentPod(name, node, component string, opts ...testobj.PodOpt) *corev1.Pod {
	return testobj.Pod(name, node, t0.Add(time.Second), append([]testobj.PodOpt{testobj.Labels(map[string]string{"startup.k8s.io/component": component})}, opts...)...)
}

func TestRulesValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*config.Config)
		want string // "" for valid; else a substring of the error
	}{
		{name: "valid", mod: func(*config.Config) {}},
		{name: "two rules with one taint key", mod: func(c *config.Config) { c.Rules[1].Taint.Key = cniTaint.Key }, want: `rules[2].taint.key: "example.com/cni-unready": rules[1] has the same taint key`},
		{name: "two rules with one name", mod: func(c *config.Config) { c.Rules[1].Name = "cni" }, want: `rules[2].name: "cni": rules[1] has the same name`},
		{name: "a top-level rule field beside rules", mod: func(c *config.Config) { c.MinHold.Duration = time.Minute }, want: "minHold: set it in a rule"},
		{name: "a rule's field error names the rule", mod: func(c *config.Config) { c.Rules[1].NodeSelector = "pool in (" }, want: `rules[1] "gpu".nodeSelector`},
		{name: "no label key in common across rules: each component cached on its own", mod: func(c *config.Config) { c.Rules[2].Components[0].Selector = "app=cni" }},
		{name: "a component that selects no label", mod: func(c *config.Config) { c.Rules[2].Components[0].Selector = "app!=cni" }, want: "requires no label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.Rules = rulesConfig(t, nil).Rules
			tc.mod(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	cfg := rulesConfig(t, nil)
	var got []string
	for _, r := range cfg.EffectiveRules() {
		got = append(got, r.CompletedAnnotation)
	}
	want := []string{config.DefaultCompletedAnnotation, gpuDone, cniDone, shadowDone}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completion annotations (-want +got):\n%s", diff)
	}
}

// TestWebhookAddsEveryMatchingRule: at CREATE every rule that writes and applies adds its
// taint; a dry-run rule adds none, and a rule whose selector misses the node adds none.
func TestWebhookAddsEveryMatchingRule(t *testing.T) {
	cfg := rulesConfig(t, nil)
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want []corev1.Taint
	}{
		{"GPU node", testobj.Node("g", t0, testobj.NodeLabel("pool", "gpu")), []corev1.Taint{gateTaint, gpuRuleTaint, cniTaint}},
		{"CPU node", testobj.Node("c", t0), []corev1.Taint{gateTaint, cniTaint}},
		{"system node: excluded from every rule, the one without a selector too", testobj.Node("s", t0, testobj.NodeLabel("kubernetes.azure.com/mode", "system")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tainted := cfg.Admit(tc.node)
			if diff := cmp.Diff(tc.want, tc.node.Spec.Taints); diff != "" {
				t.Errorf("taints after admission (-want +got):\n%s", diff)
			}
			if len(tainted) != len(tc.want) {
				t.Errorf("admit reported %d rules tainted, want %d", len(tainted), len(tc.want))
			}
		})
	}
}

// TestRulesReleaseEachOnItsOwn: each rule's taint comes off in its own guarded write when
// its own requirements hold, never touching another rule's taint; the dry-run rule writes
// nothing and reports what it would have done.
func TestRulesReleaseEachOnItsOwn(t *testing.T) {
	cfg := rulesConfig(t, nil)
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("g", t0, testobj.NodeLabel("pool", "gpu"), testobj.Taints(gateTaint, gpuRuleTaint, cniTaint)),
		componentPod("init-g", "g", "init", testobj.ReadyAt(t0.Add(time.Minute))),
		componentPod("gpu-g", "g", "gpu-driver"),
		componentPod("cni-g", "g", "cni", testobj.ReadyAt(t0.Add(time.Minute))))

	e.reconcile(t, "g")
	n := getNode(t, e.c, "g")
	if diff := cmp.Diff([]corev1.Taint{gpuRuleTaint}, n.Spec.Taints); diff != "" {
		t.Errorf("taints after the first reconcile (-want +got):\n%s", diff)
	}
	if w := e.calls.writes(); w != 2 {
		t.Errorf("%d writes, want 2: one per released rule (default, cni)", w)
	}
	for ann, want := range map[string]bool{config.DefaultCompletedAnnotation: true, cniDone: true,
		gpuDone: false, shadowDone: false} {
		if _, got := n.Annotations[ann]; got != want {
			t.Errorf("annotation %s present = %v, want %v", ann, got, want)
		}
	}
	wantEvents := []string{"Normal " + ReasonHeld, "Normal " + ReasonReleased, "Normal " + ReasonHeld,
		"Normal " + ReasonHeld, "Normal " + ReasonReleased, "Normal " + ReasonWouldHold, "Normal " + ReasonWouldRelease}
	if diff := cmp.Diff(wantEvents, e.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	setPodReady(t, e, "gpu-g")
	e.reconcile(t, "g")
	e.reconcile(t, "g") // steady state
	if n := getNode(t, e.c, "g"); len(n.Spec.Taints) != 0 {
		t.Errorf("taints left: %v", n.Spec.Taints)
	}
	if w := e.calls.writes(); w != 3 {
		t.Errorf("%d writes in all, want 3: exactly one per release per rule", w)
	}
}

// TestContinuousRuleRetaints: after release, a continuous rule's taint goes back once its
// requirements have failed for the settle time, and comes off when they hold again; the
// completion annotation is set once.
func TestContinuousRuleRetaints(t *testing.T) {
	cfg := rulesConfig(t, nil)
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("c", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"), testobj.NodeAnnotation(cniDone, "1")),
		componentPod("cni-c", "c", "cni"))
	before := counterValue(t, "startupgate_retaints_total", "rule", "cni")

	if got := e.reconcile(t, "c"); got != (reconcile.Result{RequeueAfter: 5 * time.Second}) {
		t.Errorf("first look at the failing rule: %+v, want a requeue after the settle time", got)
	}
	e.clock.Step(4 * time.Second)
	e.reconcile(t, "c")
	if w := e.calls.writes(); w != 0 {
		t.Fatalf("%d writes within the settle time, want 0", w)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, "c")
	if n := getNode(t, e.c, "c"); !cmp.Equal(n.Spec.Taints, []corev1.Taint{cniTaint}) {
		t.Fatalf("taints after the settle time: %v, want the CNI taint back", n.Spec.Taints)
	}
	if d := counterValue(t, "startupgate_retaints_total", "rule", "cni") - before; d != 1 {
		t.Errorf("retaints_total{rule=cni} grew by %v, want 1", d)
	}

	setPodReady(t, e, "cni-c")
	e.reconcile(t, "c")
	n := getNode(t, e.c, "c")
	if len(n.Spec.Taints) != 0 || n.Annotations[cniDone] != "1" {
		t.Errorf("after readiness returned: taints %v, completion %q; want no taint and the first completion kept",
			n.Spec.Taints, n.Annotations[cniDone])
	}
	if w := e.calls.writes(); w != 2 {
		t.Errorf("%d writes, want 2 (re-taint, release)", w)
	}
	// The dry-run rule, which has no selector, would hold the node: its init Pod is absent.
	wantEvents := []string{"Normal " + ReasonWouldHold, "Warning " + ReasonRetainted, "Normal " + ReasonReleased}
	if diff := cmp.Diff(wantEvents, e.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestRetaintConfirmedAgainstAPIServer: a re-taint decided from a cache that lags the
// apiserver is decided again on the apiserver's copy, and is written only if that copy
// still calls for it. A node the apiserver no longer has, or
// has under another UID, is left to the next event; a failed read is the reconcile's error.
func TestRetaintConfirmedAgainstAPIServer(t *testing.T) {
	node := func(uid types.UID) *corev1.Node {
		n := testobj.Node("c", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"), testobj.NodeAnnotation(cniDone, "1"))
		n.UID = uid
		return n
	}
	unready := func() *corev1.Pod { return componentPod("cni-c", "c", "cni") }
	failList := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("apiserver unavailable")
	}}
	for _, tc := range []struct {
		name       string
		live       func(now time.Time) []client.Object
		funcs      interceptor.Funcs
		wantTaints []corev1.Taint
		wantWrites int
		wantErr    string
	}{
		{name: "the apiserver has the Pod Ready again: no write", live: func(now time.Time) []client.Object {
			return []client.Object{node("u1"), componentPod("cni-c", "c", "cni", testobj.ReadyAt(now.Add(2*time.Second)))}
		}},
		{name: "the apiserver agrees: re-tainted", live: func(time.Time) []client.Object { return []client.Object{node("u1"), unready()} },
			wantTaints: []corev1.Taint{cniTaint}, wantWrites: 1},
		{name: "the node was replaced: no write", live: func(time.Time) []client.Object { return []client.Object{node("u2"), unready()} }},
		{name: "the node is gone: no write", live: func(time.Time) []client.Object { return []client.Object{unready()} }},
		{name: "the read fails: an error, no write", live: func(time.Time) []client.Object { return []client.Object{node("u1"), unready()} },
			funcs: failList, wantErr: "apiserver unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rulesConfig(t, nil)
			e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node("u1"), unready()) // the cache: not Ready
			live, liveCalls := newFakeClient(tc.funcs, tc.live(e.clock.Now())...)
			e.r.Reader = live

			e.reconcile(t, "c")
			if liveCalls.reads() != 0 {
				t.Errorf("%d reads from the apiserver before any re-taint was due, want 0", liveCalls.reads())
			}
			e.clock.Step(5 * time.Second)
			_, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "c"}})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Reconcile error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantTaints, getNode(t, e.c, "c").Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if w := e.calls.writes(); w != tc.wantWrites {
				t.Errorf("%d writes, want %d", w, tc.wantWrites)
			}
			if liveCalls.reads() == 0 {
				t.Error("the re-taint was decided without reading the apiserver")
			}
		})
	}
}

// TestNodeLeavesRuleSelector: relabelled out of a rule's selector, a node loses that rule's
// taint in one write; a node that was never seen inside it keeps it (registered by hand).
func TestNodeLeavesRuleSelector(t *testing.T) {
	cfg := rulesConfig(t, nil)
	inPool := testobj.Node("g", t0, testobj.NodeLabel("pool", "gpu"), testobj.Taints(gpuRuleTaint),
		testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"), testobj.NodeAnnotation(cniDone, "1"),
		testobj.NodeAnnotation(gpuPlaced, rule.PlacedValue(gpuRuleTaint, "")))
	left := inPool.DeepCopy()
	delete(left.Labels, "pool")
	byHand := left.DeepCopy()
	byHand.Name = "h"
	delete(byHand.Annotations, gpuPlaced)
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, left, byHand, componentPod("cni-g", "g", "cni", testobj.ReadyAt(t0)),
		componentPod("cni-h", "h", "cni", testobj.ReadyAt(t0)))

	if !e.r.NodeChanged(inPool, left) {
		t.Fatal("a label change must reach the reconciler")
	}
	e.reconcile(t, "g")
	e.reconcile(t, "h")
	if n := getNode(t, e.c, "g"); len(n.Spec.Taints) != 0 {
		t.Errorf("node that left the GPU pool keeps %v", n.Spec.Taints)
	}
	if n := getNode(t, e.c, "h"); !cmp.Equal(n.Spec.Taints, []corev1.Taint{gpuRuleTaint}) {
		t.Errorf("node never seen in the pool: taints %v, want the hand-set taint kept", n.Spec.Taints)
	}
	if w := e.calls.writes(); w != 1 {
		t.Errorf("%d writes, want 1", w)
	}
}

func setPodReady(t *testing.T, e *reconcilerEnv, name string) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	testobj.ReadyAt(e.clock.Now())(pod)
	if err := e.c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// TestPodGuardClosesContinuousWindow: once a continuous rule's requirement fails on a node it
// released, the guard denies a binding there before the taint is back, reading the node's
// init Pods from the API; while the requirement holds it allows it.
func TestPodGuardClosesContinuousWindow(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:3] })
	released := testobj.Node("c", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"), testobj.NodeAnnotation(cniDone, "1"))
	for _, tc := range []struct {
		name    string
		cni     *corev1.Pod
		allowed bool
	}{
		{"CNI ready", componentPod("cni-c", "c", "cni", testobj.ReadyAt(t0)), true},
		{"CNI unready, taint not back yet", componentPod("cni-c", "c", "cni"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFakeClient(interceptor.Funcs{}, released.DeepCopy(), tc.cni)
			g := &PodGuard{Cache: c, API: c, Config: cfg}
			resp := g.decide(context.Background(), "c", nil).response()
			if resp.Allowed != tc.allowed {
				t.Errorf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
		})
	}
}

// TestReconcileReadsOnlyWhatARuleDecides: a Node event about a node no rule has to decide
// on (released by every rule, or excluded) reads nothing beyond the Node itself; a held
// node reads its init Pods and the DaemonSets once, however many rules decide.
func TestReconcileReadsOnlyWhatARuleDecides(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:2] }) // default and gpu, both startup
	released := testobj.Node("r", t0, testobj.NodeLabel("pool", "gpu"),
		testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"), testobj.NodeAnnotation(gpuDone, "1"))
	excluded := testobj.Node("x", t0, testobj.NodeLabel("kubernetes.azure.com/mode", "system"))
	held := testobj.Node("h", t0, testobj.NodeLabel("pool", "gpu"), testobj.Taints(gateTaint, gpuRuleTaint))
	for _, tc := range []struct {
		node      string
		wantLists int
	}{{"r", 0}, {"x", 0}, {"h", 2}} {
		t.Run(tc.node, func(t *testing.T) {
			e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, released.DeepCopy(), excluded.DeepCopy(), held.DeepCopy())
			e.reconcile(t, tc.node)
			if e.calls.lists != tc.wantLists {
				t.Errorf("reconcile of %s listed %d times, want %d", tc.node, e.calls.lists, tc.wantLists)
			}
		})
	}
}

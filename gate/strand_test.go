package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// The tests in this file are the paths off the scenarios' lines on which the gate stranded
// a node, let a Pod in early, or denied a binding no rule stood for (issue 54's list). Each
// is written against the gate's behaviour only (a node and its Pods in, the node's taints
// and annotations out), so that it runs on the gate before the fixes, where it fails.

// restartInit restarts the init Pod's containers as a kubelet does after a reboot: a new
// container ID and a restart count one higher, Ready (since at, by the kubelet's clock) or
// not yet.
func restartInit(t *testing.T, c client.Client, name string, ready bool, at time.Time) {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, p); err != nil {
		t.Fatal(err)
	}
	restarts := int32(0)
	if len(p.Status.ContainerStatuses) > 0 {
		restarts = p.Status.ContainerStatuses[0].RestartCount + 1
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(at)}}
	p.Status.ContainerStatuses = nil
	for _, ct := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Ready: ready,
			RestartCount: restarts, ContainerID: fmt.Sprintf("containerd://%s-%d", ct.Name, restarts)})
	}
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// readyInit turns the init Pod's current containers Ready since at (by the kubelet's clock).
func readyInit(t *testing.T, c client.Client, name string, at time.Time) {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = true
	}
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// releasedOnB1 is a node the reboot-gating rule of cfg releases on boot b1, its init Pod
// Ready (first container) since t0+1m; the reconciler env is returned after that release.
func releasedOnB1(t *testing.T, cfg *config.Config, funcs interceptor.Funcs) *reconcilerEnv {
	t.Helper()
	node := testobj.Node("n", t0, testobj.Taints(gateTaint))
	node.Status.NodeInfo.BootID = "b1"
	pod := componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute)))
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://main-0"
	e := newReconcilerEnv(t, cfg, false, funcs, node, pod)
	e.r.Reader = e.c // as the gate runs: decisions that rest on current Pods read them
	e.reconcile(t, "n")
	rl := cfg.EffectiveRules()[0]
	if n := getNode(t, e.c, "n"); rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b1" {
		t.Fatalf("setup: taints %v, annotations %v; want released on boot b1", n.Spec.Taints, n.Annotations)
	}
	return e
}

// settle reconciles the node a few times, as the events that follow a change would.
func settle(t *testing.T, e *reconcilerEnv, name string) {
	t.Helper()
	for range 3 {
		e.reconcile(t, name)
	}
}

// withRule is cfg's first rule changed by mod, revalidated: an operator's edit.
func withRule(t *testing.T, cfg *config.Config, mod func(*rule.Rule)) *config.Config {
	t.Helper()
	c := *cfg
	c.Rules = append([]rule.Rule(nil), cfg.Rules...)
	mod(&c.Rules[0])
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestFreshReadinessAlreadyHappened: readiness on the new boot counts however the gate comes
// to see it: after it was down through the reboot and the warm-up, after a suspended rule
// resumes, after onReboot went gate, ignore and gate again, within the re-gate's own second,
// and from a kubelet whose clock is behind the gate's. The node ends released on the new
// boot, not held for a Ready transition that already happened.
func TestFreshReadinessAlreadyHappened(t *testing.T) {
	for _, tt := range []struct {
		name string
		// path takes the released node through the reboot and its warm-up.
		path func(t *testing.T, e *reconcilerEnv, cfg *config.Config)
	}{
		{name: "gate down through the reboot and the warm-up", path: func(t *testing.T, e *reconcilerEnv, _ *config.Config) {
			t.Helper()
			setBoot(t, e.c, "n", "b2")
			restartInit(t, e.c, "init-n", true, e.clock.Now().Add(10*time.Minute))
			e.clock.Step(20 * time.Minute)
		}},
		{name: "suspended through the reboot, then resumed", path: func(t *testing.T, e *reconcilerEnv, cfg *config.Config) {
			t.Helper()
			e.r.Config = withRule(t, cfg, func(r *rule.Rule) { r.Suspend = true })
			setBoot(t, e.c, "n", "b2")
			restartInit(t, e.c, "init-n", false, e.clock.Now())
			settle(t, e, "n")
			e.clock.Step(time.Minute)
			restartInit(t, e.c, "init-n", true, e.clock.Now())
			settle(t, e, "n")
			e.clock.Step(time.Minute)
			e.r.Config = cfg
		}},
		{name: "onReboot gate, ignore, gate", path: func(t *testing.T, e *reconcilerEnv, cfg *config.Config) {
			t.Helper()
			e.r.Config = withRule(t, cfg, func(r *rule.Rule) { r.OnReboot = rule.RebootIgnore })
			setBoot(t, e.c, "n", "b2")
			restartInit(t, e.c, "init-n", true, e.clock.Now().Add(time.Minute))
			e.clock.Step(2 * time.Minute)
			settle(t, e, "n")
			e.r.Config = cfg
		}},
		{name: "Ready within the re-gate's second", path: func(t *testing.T, e *reconcilerEnv, _ *config.Config) {
			t.Helper()
			setBoot(t, e.c, "n", "b2")
			restartInit(t, e.c, "init-n", false, e.clock.Now())
			e.reconcile(t, "n") // the re-gate, at the fake clock's second
			readyInit(t, e.c, "init-n", e.clock.Now())
		}},
		{name: "the kubelet's clock behind the gate's", path: func(t *testing.T, e *reconcilerEnv, _ *config.Config) {
			t.Helper()
			setBoot(t, e.c, "n", "b2")
			restartInit(t, e.c, "init-n", false, e.clock.Now().Add(-time.Minute))
			e.reconcile(t, "n")
			e.clock.Step(5 * time.Second)
			readyInit(t, e.c, "init-n", e.clock.Now().Add(-30*time.Second))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rebootConfig(t)
			e := releasedOnB1(t, cfg, interceptor.Funcs{})
			tt.path(t, e, cfg)
			settle(t, e, "n")
			rl := cfg.EffectiveRules()[0]
			if n := getNode(t, e.c, "n"); rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b2" {
				t.Errorf("taints %v, annotations %v; want released on boot b2: its init Pod is Ready on it", n.Spec.Taints, n.Annotations)
			}
		})
	}
}

// TestPodGuardRebootedNodeNoRuleHolds: a rebooted node whose reboot-gating rule is
// suspended, or no longer selects it, will never get the taint back; the guard must not
// deny its bindings for that rule.
func TestPodGuardRebootedNodeNoRuleHolds(t *testing.T) {
	cfg := rebootConfig(t)
	rl := cfg.EffectiveRules()[0]
	node := testobj.Node("n", t0, testobj.NodeAnnotation(rl.CompletedAnnotation, "1"), testobj.NodeAnnotation(rl.BootAnnotation(), "b1"))
	node.Status.NodeInfo.BootID = "b2"
	for _, tt := range []struct {
		name string
		mod  func(*rule.Rule)
	}{
		{name: "rule suspended", mod: func(r *rule.Rule) { r.Suspend = true }},
		{name: "rule no longer selects the node", mod: func(r *rule.Rule) { r.NodeSelector = "pool=gpu" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newFakeClient(interceptor.Funcs{}, node.DeepCopy())
			g := &PodGuard{Cache: c, API: c, Config: withRule(t, cfg, tt.mod)}
			if resp := g.decide(context.Background(), "n", nil).response(); !resp.Allowed {
				t.Errorf("denied (%s); no rule will hold the node again", resp.Result.Message)
			}
		})
	}
}

// regatedOnB2 is a node the reboot-gating rule of cfg released on b1 and re-gated on b2,
// its init Pod restarted and not Ready yet.
func regatedOnB2(t *testing.T, cfg *config.Config) *reconcilerEnv {
	t.Helper()
	e := releasedOnB1(t, cfg, interceptor.Funcs{})
	setBoot(t, e.c, "n", "b2")
	restartInit(t, e.c, "init-n", false, e.clock.Now())
	e.clock.Step(time.Second)
	e.reconcile(t, "n")
	if n := getNode(t, e.c, "n"); !cfg.EffectiveRules()[0].HasTaint(n) {
		t.Fatalf("setup: taints %v; want the node re-gated", n.Spec.Taints)
	}
	return e
}

// TestRegateEndsWhenOnRebootIsIgnore: switching onReboot from gate to ignore ends every
// re-gate: the rule no longer holds rebooted nodes, so its taint comes off.
func TestRegateEndsWhenOnRebootIsIgnore(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	e.r.Config = withRule(t, cfg, func(r *rule.Rule) { r.OnReboot = rule.RebootIgnore })
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); cfg.EffectiveRules()[0].HasTaint(n) {
		t.Errorf("taints %v; a rule that no longer gates reboots holds the re-gated node for good", n.Spec.Taints)
	}
}

// TestDerivedAnnotationKeysValidated: a rule's completion annotation becomes part of the
// annotation keys the gate writes (its boot, readiness, re-gate records); one that makes
// one of them invalid must fail validation, not every release on every node.
func TestDerivedAnnotationKeysValidated(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Rules = []rule.Rule{{Name: "warm", Taint: gateTaint, OnReboot: rule.RebootGate, CompletedAnnotation: "example.com/" + strings.Repeat("a", 56),
		Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "rules[0]") {
		t.Errorf("Validate() = %v; want an error naming rules[0]: its annotation keys exceed 63 characters", err)
	}
}

// TestReconcileRunsEveryRuleDespiteAnError: one rule's failed write must not keep the
// node's other rules from running.
func TestReconcileRunsEveryRuleDespiteAnError(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:2] })
	node := testobj.Node("n", t0, testobj.Taints(gateTaint, gpuRuleTaint), testobj.NodeLabel("pool", "gpu"))
	fail := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if n, ok := obj.(*corev1.Node); ok && !cfg.EffectiveRules()[0].HasTaint(n) {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, n.Name, nil)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	e := newReconcilerEnv(t, cfg, false, fail, node,
		componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))),
		componentPod("gpu-n", "n", "gpu-driver", testobj.ReadyAt(t0.Add(time.Minute))))
	if _, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "n"}}); err == nil {
		t.Errorf("Reconcile() = nil, want the first rule's error")
	}
	if n := getNode(t, e.c, "n"); cfg.EffectiveRules()[1].HasTaint(n) {
		t.Errorf("taints %v; the gpu rule never ran after the default rule's write failed", n.Spec.Taints)
	}
}

// TestReleaseRechecksTheBoot: the node rebooted between the decision and the write (a
// conflict, then the fresh read shows a new boot). The release was decided on the old boot's
// readiness and must not be written, nor decided again on it.
func TestReleaseRechecksTheBoot(t *testing.T) {
	cfg := rebootConfig(t)
	funcs := kubeletWritesFirst(func(n *corev1.Node) { n.Status.NodeInfo.BootID = "b2" })
	node := testobj.Node("n", t0, testobj.Taints(gateTaint))
	node.Status.NodeInfo.BootID = "b1"
	pod := componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute)))
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://main-0"
	e := newReconcilerEnv(t, cfg, false, funcs, node, pod)
	heldThenReleased(t, e, cfg.EffectiveRules()[0], "b2", "released on boot b1's readiness while the node runs b2")
}

// TestSecondRebootWhileRegated: re-gated for b2, the node reboots again before the gate saw
// b2's readiness; the gate must wait for b3's, not release on b2's.
func TestSecondRebootWhileRegated(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	readyInit(t, e.c, "init-n", e.clock.Now().Add(5*time.Second)) // b2's readiness, unseen by the gate
	setBoot(t, e.c, "n", "b3")
	e.clock.Step(time.Minute)
	heldThenReleased(t, e, cfg.EffectiveRules()[0], "b3", "released on boot b2's readiness while the node runs b3")
}

// TestRemovalRechecksTheSelector: the gate decides to take the GPU rule's taint off a node
// that left the rule's selector, and the node's label is put back before the write (a
// conflict, then the fresh read). The node is selected again and not warmed: its taint is
// its hold and must stay.
func TestRemovalRechecksTheSelector(t *testing.T) {
	cfg := rulesConfig(t, nil)
	gpu := cfg.EffectiveRules()[1]
	node := testobj.Node("n", t0, testobj.Taints(gateTaint, gpuRuleTaint), testobj.NodeAnnotation(gpu.PlacedAnnotation, gpu.PlacedValue()))
	e := newReconcilerEnv(t, cfg, false, writesFirst(false, func(n *corev1.Node) { n.Labels["pool"] = "gpu" }), node)
	e.reconcile(t, "n")
	if n := getNode(t, e.c, "n"); !gpu.HasTaint(n) {
		t.Errorf("taints %v, labels %v: the GPU rule's taint came off a node its selector matches again", n.Spec.Taints, n.Labels)
	}
}

// kubeletWritesFirst fails the gate's first Node patch with a conflict, after writing edit
// to the Node's status as the kubelet would between the gate's read and its write. Later
// patches go through.
func kubeletWritesFirst(edit func(*corev1.Node)) interceptor.Funcs { return writesFirst(true, edit) }

// writesFirst is kubeletWritesFirst for another writer: the Node's status, or its object
// (labels, annotations) as a labeller or an operator would.
func writesFirst(status bool, edit func(*corev1.Node)) interceptor.Funcs {
	conflicted := false
	return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if conflicted {
			return c.Patch(ctx, obj, patch, opts...)
		}
		conflicted = true
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), n); err != nil {
			return err
		}
		edit(n)
		update := func() error { return c.Update(ctx, n) }
		if status {
			update = func() error { return c.Status().Update(ctx, n) }
		}
		if err := update(); err != nil {
			return err
		}
		return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, n.Name, errors.New("the kubelet wrote first"))
	}}
}

// heldThenReleased: the node stays held (early says what a release now would be), and is
// released on boot once its init Pod is Ready on new containers.
func heldThenReleased(t *testing.T, e *reconcilerEnv, rl *rule.Rule, boot, early string) {
	t.Helper()
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !rl.HasTaint(n) {
		t.Fatalf("taints %v, annotations %v; %s", n.Spec.Taints, n.Annotations, early)
	}
	restartInit(t, e.c, "init-n", true, e.clock.Now())
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != boot {
		t.Errorf("taints %v, annotations %v; want released on boot %s once its init Pod is Ready on it", n.Spec.Taints, n.Annotations, boot)
	}
}

// TestRegistrationAfterAReboot: Karpenter put the taint back at registration, and the node
// rebooted since its release: the readiness of the release's boot must not release it.
func TestRegistrationAfterAReboot(t *testing.T) {
	cfg := rebootConfig(t)
	e := releasedOnB1(t, cfg, interceptor.Funcs{})
	rl := cfg.EffectiveRules()[0]
	n := getNode(t, e.c, "n")
	n.Spec.Taints = append(n.Spec.Taints, gateTaint)
	n.Labels = map[string]string{rule.KarpenterRegisteredLabel: "true"}
	if err := e.c.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	setBoot(t, e.c, "n", "b2")
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !rl.HasTaint(n) {
		t.Fatalf("taints %v; released on boot b1's readiness after a reboot", n.Spec.Taints)
	}
	restartInit(t, e.c, "init-n", true, e.clock.Now())
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); rl.HasTaint(n) {
		t.Errorf("taints %v; want released once the init Pod is Ready on boot b2", n.Spec.Taints)
	}
}

// TestDoNotSyncTaintsIsNotKarpentersCopy: Karpenter never writes the startup taints back
// onto a node labelled do-not-sync-taints, so a taint with the rule's key there is someone
// else's, and the gate must leave it.
func TestDoNotSyncTaintsIsNotKarpentersCopy(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:1] })
	rl := cfg.EffectiveRules()[0]
	node := testobj.Node("n", t0, testobj.Taints(gateTaint), testobj.NodeAnnotation(rl.CompletedAnnotation, "1"),
		testobj.NodeLabel(rule.KarpenterRegisteredLabel, "true"), testobj.NodeLabel("karpenter.sh/do-not-sync-taints", "true"))
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node, componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))))
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !rl.HasTaint(n) {
		t.Errorf("taints %v; lifted a taint Karpenter never wrote back", n.Spec.Taints)
	}
}

// TestRuleGoneWhileHolding: a rule removed, or its taint key changed, while it holds a node
// it tainted must not leave its taint there for good. A rule only renamed goes on holding
// under its new name. The grace period passes first (an hour is past any default).
func TestRuleGoneWhileHolding(t *testing.T) {
	gpuNode := func() *corev1.Node {
		return testobj.Node("n", t0, testobj.NodeLabel("pool", "gpu"))
	}
	for _, tt := range []struct {
		name string
		edit func(c *config.Config)
		// gone is the taint that must be off at the end; kept, one that must be on.
		gone, kept *corev1.Taint
	}{
		{name: "rule removed", edit: func(c *config.Config) { c.Rules = c.Rules[:1] }, gone: &gpuRuleTaint},
		{name: "taint key changed", edit: func(c *config.Config) { c.Rules[1].Taint.Key = "example.com/gpu-warming" }, gone: &gpuRuleTaint,
			kept: &corev1.Taint{Key: "example.com/gpu-warming", Effect: corev1.TaintEffectNoSchedule}},
		{name: "rule renamed", edit: func(c *config.Config) { c.Rules[1].Name = "accelerator" }, kept: &gpuRuleTaint},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:2] })
			node := gpuNode()
			cfg.Admit(node) // the webhook, at the node's CREATE
			e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node)
			settle(t, e, "n")
			next := *cfg
			next.Rules = append([]rule.Rule(nil), cfg.Rules...)
			tt.edit(&next)
			if err := next.Validate(); err != nil {
				t.Fatal(err)
			}
			e.r.Config = &next
			settle(t, e, "n")
			e.clock.Step(time.Hour)
			settle(t, e, "n")
			n := getNode(t, e.c, "n")
			has := func(tn *corev1.Taint) bool {
				for _, x := range n.Spec.Taints {
					if x.Key == tn.Key && x.Effect == tn.Effect {
						return true
					}
				}
				return false
			}
			if tt.gone != nil && has(tt.gone) {
				t.Errorf("taints %v; %s stays on a node no rule holds", n.Spec.Taints, tt.gone.Key)
			}
			if tt.kept != nil && !has(tt.kept) {
				t.Errorf("taints %v; want %s: the node's warm-up has not finished", n.Spec.Taints, tt.kept.Key)
			}
		})
	}
}

// TestOtherInstancesTaintsLeftAlone: two gates in one cluster, with disjoint node selectors
// and rules of the same names, mark their taints with their instance; neither lifts the
// other's, neither as a node outside its selector nor as an orphan.
func TestOtherInstancesTaintsLeftAlone(t *testing.T) {
	ours := rulesConfig(t, func(c *config.Config) {
		c.Instance = "team-a"
		c.Rules = c.Rules[1:2] // gpu
		c.Rules[0].NodeSelector = "pool=gpu,team=a"
	})
	theirs := rulesConfig(t, func(c *config.Config) {
		c.Instance = "team-b"
		c.Rules = c.Rules[1:2]
		c.Rules[0].NodeSelector = "pool=gpu,team=b"
		c.Rules[0].Name = "accelerator"
	})
	node := testobj.Node("n", t0, testobj.NodeLabel("pool", "gpu"), testobj.NodeLabel("team", "b"))
	theirs.Admit(node)
	if !theirs.EffectiveRules()[0].HasTaint(node) {
		t.Fatalf("setup: team b's gate did not taint its node: %v", node.Spec.Taints)
	}
	e := newReconcilerEnv(t, ours, false, interceptor.Funcs{}, node)
	settle(t, e, "n")
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	if w := e.calls.writes(); w != 0 {
		t.Errorf("team a's gate wrote %d times to team b's node: taints %v", w, getNode(t, e.c, "n").Spec.Taints)
	}
}

// stripEvidence removes the readiness evidence from the node, as a gate from before the
// evidence left its released and re-gated nodes.
func stripEvidence(t *testing.T, c client.Client, name string, rl *rule.Rule) {
	t.Helper()
	n := getNode(t, c, name)
	delete(n.Annotations, rl.EvidenceAnnotation())
	if err := c.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// TestOrphanLiftedWithBackfillOn: with backfill on, a node whose only startup taint is an
// orphan looks untainted and unreleased to the rules in force (the gpu rule replaced by a
// default rule that never saw the node), and a Pod that tolerates the orphan makes it busy,
// so backfill leaves it. The orphan must still be lifted, not left on for good.
func TestOrphanLiftedWithBackfillOn(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[1:2] })
	gpu := cfg.EffectiveRules()[0]
	node := testobj.Node("n", t0, testobj.NodeLabel("pool", "gpu"))
	cfg.Admit(node)
	tolerant := testobj.Pod("batch", "n", t0.Add(time.Minute), testobj.Namespace("default"),
		testobj.Tolerations(corev1.Toleration{Key: gpuRuleTaint.Key, Operator: corev1.TolerationOpExists}))
	e := newReconcilerEnv(t, cfg, true, interceptor.Funcs{}, node, tolerant)
	settle(t, e, "n")
	next := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:1] })
	e.r.Config, e.r.Backfill.Config = next, next
	settle(t, e, "n") // seen orphaned: the grace period starts
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	n := getNode(t, e.c, "n")
	if gpu.HasTaint(n) {
		t.Errorf("taints %v; the removed gpu rule's taint stays on with backfill on", n.Spec.Taints)
	}
	if !next.EffectiveRules()[0].HasTaint(n) {
		t.Errorf("taints %v; want the default rule's taint, which admission adds now, on in its place", n.Spec.Taints)
	}
}

// TestRekeyWhileRegated: a rule's taint key changes while it holds a re-gated node. The
// node's warm-up on its new boot has not finished, so it stays held under the new key
// until it has; admission alone would not taint it again (the rule completed on b1).
func TestRekeyWhileRegated(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	next := withRule(t, cfg, func(r *rule.Rule) { r.Taint.Key = "example.com/warming" })
	e.r.Config = next
	settle(t, e, "n") // seen orphaned: the grace period starts
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	old, rl := cfg.EffectiveRules()[0], next.EffectiveRules()[0]
	if n := getNode(t, e.c, "n"); old.HasTaint(n) || !rl.HasTaint(n) {
		t.Fatalf("taints %v, annotations %v; want the old key lifted and the node held under the new one", n.Spec.Taints, n.Annotations)
	}
	restartInit(t, e.c, "init-n", true, e.clock.Now())
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b2" {
		t.Errorf("taints %v, annotations %v; want released on boot b2", n.Spec.Taints, n.Annotations)
	}
}

// TestEvidenceRecordedAfterUpgrade: a node released by a gate from before the evidence has
// its boot recorded and no readiness; the gate records the readiness before any reboot, so
// that the init Pod left Ready from before a reboot is known as the old boot's.
func TestEvidenceRecordedAfterUpgrade(t *testing.T) {
	cfg := rebootConfig(t)
	e := releasedOnB1(t, cfg, interceptor.Funcs{})
	rl := cfg.EffectiveRules()[0]
	stripEvidence(t, e.c, "n", rl)
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); rl.Evidence(n) == nil {
		t.Fatalf("annotations %v; want the released boot's readiness recorded", n.Annotations)
	}
	setBoot(t, e.c, "n", "b2")
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !rl.HasTaint(n) {
		t.Errorf("taints %v; the rebooted node was not re-gated: b1's Ready init Pod counted for b2", n.Spec.Taints)
	}
}

// TestLegacyRegateWithoutEvidence: re-gated by a gate from before the evidence, the node
// has a re-gate time and no readiness record; readiness from at or before the re-gate is the
// old boot's and must not release it.
func TestLegacyRegateWithoutEvidence(t *testing.T) {
	cfg := rebootConfig(t)
	e := releasedOnB1(t, cfg, interceptor.Funcs{})
	rl := cfg.EffectiveRules()[0]
	setBoot(t, e.c, "n", "b2")
	e.clock.Step(time.Second)
	e.reconcile(t, "n")
	if n := getNode(t, e.c, "n"); !rl.HasTaint(n) {
		t.Fatalf("setup: taints %v; want the node re-gated", n.Spec.Taints)
	}
	stripEvidence(t, e.c, "n", rl)
	e.clock.Step(time.Minute)
	heldThenReleased(t, e, rl, "b2", "released on boot b1's readiness")
}

// TestUntaintedNodeNotWritten: a node that came up without the taint, backfill off, is
// nothing the rules write to, even a rule that gates reboots and would record a boot.
func TestUntaintedNodeNotWritten(t *testing.T) {
	cfg := rebootConfig(t)
	node := testobj.Node("n", t0)
	node.Status.NodeInfo.BootID = "b1"
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node,
		componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))))
	settle(t, e, "n")
	if w := e.calls.writes(); w != 0 {
		t.Errorf("%d writes to an untainted node; annotations %v", w, getNode(t, e.c, "n").Annotations)
	}
}

// TestRekeyWhileSuspended: a suspended rule's key changes while it holds a node. Suspended,
// it writes nothing: the old key's taint stays, not lifted as an orphan, which would release
// a node whose warm-up has not run. Resumed, the node is held under the new key.
func TestRekeyWhileSuspended(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	old := cfg.EffectiveRules()[0]
	suspended := withRule(t, cfg, func(r *rule.Rule) { r.Taint.Key = "example.com/warming"; r.Suspend = true })
	e.r.Config = suspended
	settle(t, e, "n")
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !old.HasTaint(n) {
		t.Fatalf("taints %v; the suspended rule's node lost its taint before its warm-up ran", n.Spec.Taints)
	}
	resumed := withRule(t, suspended, func(r *rule.Rule) { r.Suspend = false })
	e.r.Config = resumed
	settle(t, e, "n")
	e.clock.Step(time.Hour)
	if n := getNode(t, e.c, "n"); !old.HasTaint(n) && !resumed.EffectiveRules()[0].HasTaint(n) {
		t.Fatalf("taints %v; the resumed rule's node was released before its warm-up ran", n.Spec.Taints)
	}
	heldThenReleased(t, e, resumed.EffectiveRules()[0], "b2", "released before its warm-up ran")
}

// TestRebootedAgainWhileRekeyed: re-gated for b2, the node reboots again and the rule's key
// changes; the rule, waiting for the orphan pass, must still note the new boot, so that the
// warm-up on b3 that follows counts once the new key is on (found by the model explorer at
// depth 6: rekeyed wrote nothing, and the warm-up was then taken for b2's).
func TestRebootedAgainWhileRekeyed(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	setBoot(t, e.c, "n", "b3")
	restartInit(t, e.c, "init-n", false, e.clock.Now())
	next := withRule(t, cfg, func(r *rule.Rule) { r.Taint.Key = "example.com/warming" })
	e.r.Config = next
	settle(t, e, "n") // rekeyed, and the orphan seen: the grace starts
	readyInit(t, e.c, "init-n", e.clock.Now().Add(time.Second))
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); next.EffectiveRules()[0].HasTaint(n) || cfg.EffectiveRules()[0].HasTaint(n) {
		t.Errorf("taints %v, annotations %v; want released on boot b3's warm-up", n.Spec.Taints, n.Annotations)
	}
}

// TestDryRunWhileSuspended: a suspended rule is made a dry run while it holds a node, as an
// operator does who means to stop enforcing it. Suspended, it writes nothing, dry run or
// not: its taint is no orphan to lift until it is resumed. Resumed and enforcing again, the
// node is held until its warm-up has run.
func TestDryRunWhileSuspended(t *testing.T) {
	cfg := rebootConfig(t)
	e := regatedOnB2(t, cfg)
	old := cfg.EffectiveRules()[0]
	e.r.Config = withRule(t, cfg, func(r *rule.Rule) { r.DryRun = true; r.Suspend = true })
	settle(t, e, "n")
	e.clock.Step(time.Hour)
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); !old.HasTaint(n) {
		t.Fatalf("taints %v; the suspended rule's taint was lifted", n.Spec.Taints)
	}
	e.r.Config = cfg
	heldThenReleased(t, e, old, "b2", "released before its warm-up ran")
}

// TestPodGuardRenamedBeforeAdoption: a rule renamed while it gated a node's reboots, the node
// rebooted before the renamed rule recorded it as released (its former name did): the Pod
// guard judges the node as the adoption will record it, and denies the binding a rebooted
// node's coming re-gate stands for. (The explorer found 20 Pods bound so, with the gate's
// Node view late across the rename.)
func TestPodGuardRenamedBeforeAdoption(t *testing.T) {
	cfg := rebootConfig(t)
	former := cfg.EffectiveRules()[0]
	renamed := withRule(t, cfg, func(r *rule.Rule) { r.Name, r.CompletedAnnotation = "warm-up", "" })
	pod := componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute)))
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://main-0"
	node := testobj.Node("n", t0, testobj.NodeAnnotation(former.CompletedAnnotation, "1"), testobj.NodeAnnotation(former.BootAnnotation(), "b1"),
		testobj.NodeAnnotation(former.EvidenceAnnotation(), rule.Fingerprint(pod)))
	node.Status.NodeInfo.BootID = "b2"
	c, _ := newFakeClient(interceptor.Funcs{}, node, pod)
	g := &PodGuard{Cache: c, API: c, Config: renamed}
	if resp := g.decide(context.Background(), "n", nil).response(); resp.Allowed {
		t.Errorf("allowed a binding to a node rebooted since its release under the rule's former name")
	}
	node.Status.NodeInfo.BootID = "b1" // not rebooted: nothing to deny
	c, _ = newFakeClient(interceptor.Funcs{}, node, pod)
	g = &PodGuard{Cache: c, API: c, Config: renamed}
	if resp := g.decide(context.Background(), "n", nil).response(); !resp.Allowed {
		t.Errorf("denied a binding to a node in service on the boot it was released on: %s", resp.Result.Message)
	}
}

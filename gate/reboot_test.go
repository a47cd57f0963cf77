package gate

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// rebootConfig is the default rule, gating reboots.
func rebootConfig(t *testing.T) *config.Config {
	t.Helper()
	return rulesConfig(t, func(c *config.Config) {
		c.Rules = c.Rules[:1]
		c.Rules[0].OnReboot = rule.RebootGate
	})
}

// setBoot makes the node report boot id, as a kubelet does after a reboot.
func setBoot(t *testing.T, c client.Client, name, id string) {
	t.Helper()
	n := getNode(t, c, name)
	n.Status.NodeInfo.BootID = id
	if err := c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// listFails reads objects and lists none: an apiserver, or a cache, that gives a node and
// not its Pods.
type listFails struct{ client.Reader }

func (listFails) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection reset by peer")
}

// TestPodGuardRebootedPodsUnreadable: a rebooted node's init Pods tell the guard whether its
// rule is about to put the taint back (rebooted) or has seen the new boot ready
// (rebooted-ready). When neither the API nor the cache gives them, the guard cannot tell,
// and the binding is denied, not let through as if the node were not rebooted.
func TestPodGuardRebootedPodsUnreadable(t *testing.T) {
	cfg := rebootConfig(t)
	node := testobj.Node("n", t0, testobj.Taints(gateTaint))
	node.Status.NodeInfo.BootID = "b1"
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node, componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))))
	e.reconcile(t, "n") // released on b1
	guard := &PodGuard{Cache: listFails{e.c}, API: listFails{e.c}, Config: cfg}
	if resp := guard.decide(context.Background(), "n", nil).response(); !resp.Allowed {
		t.Errorf("on the boot it was released on, its init pods unreadable: denied (%s), want allowed", resp.Result.Message)
	}
	setBoot(t, e.c, "n", "b2")
	if resp := guard.decide(context.Background(), "n", nil).response(); resp.Allowed || !strings.Contains(resp.Result.Message, "cannot be read now") {
		t.Errorf("rebooted, its init pods unreadable: allowed %v (%s), want denied, saying they cannot be read", resp.Allowed, resp.Result.Message)
	}
}

// TestRebootRegates: a node released on one boot that reports another gets the taint back
// in one write, and is released again only on a Pod Ready on new containers, never on the
// Ready Pod left from before the reboot; a kubelet restart (same boot) changes nothing.
func TestRebootRegates(t *testing.T) {
	cfg := rebootConfig(t)
	node := testobj.Node("n", t0, testobj.Taints(gateTaint))
	node.Status.NodeInfo.BootID = "b1"
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node, componentPod("init-n", "n", "init", testobj.ReadyAt(t0.Add(time.Minute))))
	rl := cfg.EffectiveRules()[0]

	e.reconcile(t, "n")
	n := getNode(t, e.c, "n")
	if rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b1" {
		t.Fatalf("after the first release: taints %v, annotations %v; want released on boot b1", n.Spec.Taints, n.Annotations)
	}
	writes := e.calls.writes()

	e.reconcile(t, "n") // a kubelet restart: same boot
	if w := e.calls.writes() - writes; w != 0 {
		t.Errorf("%d writes on the same boot, want 0", w)
	}
	setBoot(t, e.c, "n", "b2")
	guard := &PodGuard{Cache: e.c, API: e.c, Config: cfg}
	if resp := guard.decide(context.Background(), "n", nil).response(); resp.Allowed {
		t.Errorf("Pod guard allowed a binding to a rebooted node before the taint was back")
	}
	writes = e.calls.writes()
	e.clock.Step(time.Hour)
	e.reconcile(t, "n")
	n = getNode(t, e.c, "n")
	if !rl.Regated(n) || e.calls.writes()-writes != 1 {
		t.Fatalf("after the reboot: taints %v, annotations %v, %d writes; want the taint back in one write", n.Spec.Taints, n.Annotations, e.calls.writes()-writes)
	}
	if resp := guard.decide(context.Background(), "n", nil).response(); resp.Allowed {
		t.Errorf("Pod guard allowed a binding to a re-gated node")
	}
	e.reconcile(t, "n") // the init Pod is still Ready from before the reboot
	if n := getNode(t, e.c, "n"); !rl.Regated(n) {
		t.Fatalf("released on the init Pod's readiness from before the reboot")
	}
	e.clock.Step(time.Minute)
	restartInit(t, e.c, "init-n", true, e.clock.Now())
	e.reconcile(t, "n")
	n = getNode(t, e.c, "n")
	if rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b2" || n.Annotations[rl.RegatedAnnotation()] != "" {
		t.Errorf("after readiness on the new boot: taints %v, annotations %v; want released on boot b2", n.Spec.Taints, n.Annotations)
	}
	if n.Annotations[config.DefaultCompletedAnnotation] != strconv.FormatInt(t0.Add(10*time.Minute).Unix(), 10) {
		t.Errorf("completedAt = %q, want the first release's time kept", n.Annotations[config.DefaultCompletedAnnotation])
	}
	want := []string{"Normal " + ReasonHeld, "Normal " + ReasonReleased, "Warning " + ReasonRegated, "Normal " + ReasonReleased}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestRebootIgnoredByDefault: without onReboot: gate, a reboot writes nothing.
func TestRebootIgnoredByDefault(t *testing.T) {
	cfg := rulesConfig(t, func(c *config.Config) { c.Rules = c.Rules[:1] })
	node := testobj.Node("n", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1"))
	node.Status.NodeInfo.BootID = "b2"
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, node)
	e.reconcile(t, "n")
	if w := e.calls.writes(); w != 0 {
		t.Errorf("%d writes for a reboot the rule ignores, want 0", w)
	}
}

// TestPodGuardReadsRebootLive: the kubelet's new boot ID and a binding can arrive faster
// than the cache follows. When the cache shows a released node that a rule gates reboots
// on, the guard reads the node from the API, and denies on the boot it finds there; it
// does not read when no reboot could open a window, and reads it once when the cache shows
// it held.
func TestPodGuardReadsRebootLive(t *testing.T) {
	cfg := rebootConfig(t)
	rl := cfg.EffectiveRules()[0]
	released := func(boot string) *corev1.Node {
		n := testobj.Node("n", t0, testobj.NodeAnnotation(rl.CompletedAnnotation, "1"), testobj.NodeAnnotation(rl.BootAnnotation(), "b1"))
		n.Status.NodeInfo.BootID = boot
		return n
	}
	for _, tt := range []struct {
		name        string
		cached, api *corev1.Node
		apiErr      error
		tolerations []corev1.Toleration
		wantAllowed bool
		wantReads   int
	}{
		{name: "cache behind a reboot", cached: released("b1"), api: released("b2"), wantReads: 1},
		{name: "no reboot", cached: released("b1"), api: released("b1"), wantAllowed: true, wantReads: 1},
		// A cut connection: the cache may be behind a reboot, and nothing can tell.
		{name: "the API unreachable", cached: released("b1"), apiErr: errors.New("connection reset by peer"), wantReads: 1},
		{name: "the node gone", cached: released("b1"), wantAllowed: true, wantReads: 1},
		// A denial is confirmed on the API's copy: released there, and rebooted since.
		{name: "still gated in the cache", cached: testobj.Node("n", t0, testobj.Taints(gateTaint)), api: released("b2"), wantReads: 1},
		{name: "tolerating Pod", cached: released("b1"), api: released("b2"), tolerations: []corev1.Toleration{{Key: gateTaint.Key, Operator: corev1.TolerationOpExists}}, wantAllowed: true, wantReads: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache, _ := newFakeClient(interceptor.Funcs{}, tt.cached)
			reads := 0
			var objs []client.Object
			if tt.api != nil {
				objs = append(objs, tt.api)
			}
			api, _ := newFakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				if tt.apiErr != nil {
					return tt.apiErr
				}
				return c.Get(ctx, key, obj, opts...)
			}}, objs...)
			g := &PodGuard{Cache: cache, API: api, Config: cfg}
			resp := g.decide(context.Background(), "n", tt.tolerations).response()
			if resp.Allowed != tt.wantAllowed || reads != tt.wantReads {
				t.Errorf("allowed %v after %d API reads, want %v after %d (%s)", resp.Allowed, reads, tt.wantAllowed, tt.wantReads, resp.Result.Message)
			}
		})
	}
}

package rule

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rebootRule is a startup rule gating reboots on the CNI component, released at t0+1m.
func rebootRule(t *testing.T, mod func(*Rule)) *Rule {
	t.Helper()
	r := Rule{Name: "cni", Taint: cniTaint, OnReboot: RebootGate,
		Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}}
	if mod != nil {
		mod(&r)
	}
	return compile(t, r)
}

// onBoot sets the boot ID the kubelet reports.
func onBoot(id string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Status.NodeInfo.BootID = id }
}

// annotated sets one annotation on the node.
func annotated(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
}

func TestDecideReboot(t *testing.T) {
	const (
		completed = "startup.k8s.io/completedAt.cni"
		boot      = completed + "_bootID"
		regated   = completed + "_regatedAt"
	)
	released := annotated(completed, strconv.FormatInt(t0.Add(time.Minute).Unix(), 10))
	regateAt := t0.Add(time.Hour)
	regatedAt := annotated(regated, strconv.FormatInt(regateAt.Unix(), 10))
	now := regateAt.Add(5 * time.Minute)
	readyAt := func(at time.Time) *corev1.Pod { return podSince(true, at) }
	tests := []struct {
		name   string
		rule   func(*Rule)
		node   *corev1.Node
		pods   []*corev1.Pod
		want   Decision
		reason string
	}{
		{name: "same boot: released, nothing to do", node: node(released, annotated(boot, "b1"), onBoot("b1")),
			pods: []*corev1.Pod{readyAt(t0)}, want: Decision{Met: true}, reason: "released"},
		{name: "kubelet reports no boot ID: nothing to do", node: node(released, annotated(boot, "b1")),
			want: Decision{Met: true}, reason: "released"},
		{name: "new boot: re-gate", node: node(released, annotated(boot, "b1"), onBoot("b2")),
			pods: []*corev1.Pod{readyAt(t0)}, want: Decision{Regate: true}, reason: "rebooted: boot b2, released on boot b1"},
		{name: "released before boots were recorded: record the boot", node: node(released, onBoot("b1")),
			want: Decision{RecordBoot: true}, reason: "recording the boot"},
		{name: "ignore: a new boot changes nothing", rule: func(r *Rule) { r.OnReboot = RebootIgnore },
			node: node(released, annotated(boot, "b1"), onBoot("b2")), want: Decision{}, reason: "released"},
		{name: "re-gated: a Pod Ready since before the reboot is stale", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{readyAt(t0.Add(2 * time.Minute))}, want: Decision{}, reason: "waiting for boot b2: component \"cni\" not ready"},
		{name: "re-gated: a Pod Ready since one second before the re-gate is stale", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{readyAt(regateAt.Add(-time.Second))}, want: Decision{}, reason: "not ready"},
		{name: "re-gated: the early-ready annotation survives a reboot and does not count", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := podSince(false, t0)
				p.Annotations = map[string]string{"startup.k8s.io/ready": "true"}
				return p
			}()}, want: Decision{}, reason: "not ready"},
		{name: "re-gated: not ready yet", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{podSince(false, regateAt.Add(time.Second))}, want: Decision{}, reason: "not ready"},
		{name: "re-gated: Ready in the re-gate's second may predate the reboot", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{readyAt(regateAt)}, want: Decision{}, reason: "not ready"},
		{name: "re-gated: Ready the second after the re-gate releases", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{readyAt(regateAt.Add(time.Second))}, want: Decision{Release: true, Met: true, ReadyAt: regateAt.Add(time.Second)}, reason: "ready again after the reboot to boot b2"},
		{name: "re-gated: Ready after the re-gate releases", node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			pods: []*corev1.Pod{readyAt(regateAt.Add(time.Minute))}, want: Decision{Release: true, Met: true, ReadyAt: regateAt.Add(time.Minute)}, reason: "ready again"},
		{name: "re-gated: max hold counts from the re-gate, not from creation", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			want: Decision{RequeueAfter: 5 * time.Minute}, reason: "waiting for boot b2"},
		{name: "re-gated: max hold passed, keep", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 5 * time.Minute}; r.TimeoutPolicy = TimeoutKeep },
			node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			want: Decision{TimedOut: true}, reason: "maximum hold 5m0s after the re-gate reached"},
		{name: "re-gated: max hold passed, release", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 5 * time.Minute} },
			node: node(released, tainted, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			want: Decision{Release: true, TimedOut: true}, reason: "maximum hold"},
		{name: "re-gate's taint removed by hand: record the boot", node: node(released, annotated(boot, "b1"), regatedAt, onBoot("b2")),
			want: Decision{RecordBoot: true}, reason: "removed by hand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rebootRule(t, tc.rule)
			checkDecision(t, Decide(r, Readiness{Annotation: "startup.k8s.io/ready"}, Input{Node: tc.node, Pods: tc.pods, Now: now}), tc.want, tc.reason)
		})
	}
}

// TestRebootWrites: the release records the boot in the same write that removes the taint,
// the re-gate adds the taint with its time, and the next release ends the re-gate.
func TestRebootWrites(t *testing.T) {
	r := rebootRule(t, nil)
	n := node(tainted, onBoot("b1"))
	r.Release(n, t0.Add(time.Minute))
	if r.HasTaint(n) || n.Annotations[r.BootAnnotation()] != "b1" || !r.Completed(n) {
		t.Fatalf("after release: taints %v, annotations %v; want no taint, completion and boot b1", n.Spec.Taints, n.Annotations)
	}
	n.Status.NodeInfo.BootID = "b2"
	if !r.BootOf(n).Rebooted() {
		t.Fatalf("BootOf() = %+v, want a reboot", r.BootOf(n))
	}
	r.Regate(n, t0.Add(time.Hour))
	if !r.Regated(n) || !r.BootOf(n).RegatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after re-gate: Regated %v, BootOf %+v", r.Regated(n), r.BootOf(n))
	}
	r.Release(n, t0.Add(2*time.Hour))
	b := r.BootOf(n)
	if r.Regated(n) || b.Released != "b2" || !b.RegatedAt.IsZero() || b.Rebooted() {
		t.Errorf("after the second release: Regated %v, BootOf %+v; want boot b2 recorded and the re-gate over", r.Regated(n), b)
	}
	plain := compile(t, Rule{Name: "init", Taint: cniTaint, Components: []Component{{Selector: "app=cni"}}})
	m := node(tainted, onBoot("b1"))
	plain.Release(m, t0)
	if _, ok := m.Annotations[plain.BootAnnotation()]; ok {
		t.Errorf("a rule that ignores reboots recorded the boot: %v", m.Annotations)
	}
}

func TestOnRebootValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule Rule
		want string
	}{
		{"continuous rule", Rule{Name: "c", Mode: Continuous, Taint: cniTaint, OnReboot: RebootGate, Components: []Component{{Selector: "app=cni"}}}, "only a startup rule"},
		{"conditions only", Rule{Name: "c", Taint: cniTaint, OnReboot: RebootGate, Conditions: []ConditionRequirement{ParseConditionRequirement("Ready=True")}}, "needs a component"},
		{"unknown policy", Rule{Name: "c", Taint: cniTaint, OnReboot: "drain", Components: []Component{{Selector: "app=cni"}}}, `"drain": must be "ignore" or "gate"`},
		{"condition rule", Rule{Name: "c", Mode: Condition, Taint: cniTaint, OnReboot: RebootGate, Match: []Match{{Type: "Ready", Status: "False"}}}, "onReboot: a condition rule does not use it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			r.CompletedAnnotation = "startup.k8s.io/completedAt.c"
			var errs Errors
			r.Compile("", &errs)
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("Compile() errors = %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

package rule

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

var cniTaint = corev1.Taint{Key: "example.com/cni-unready", Effect: corev1.TaintEffectNoSchedule}

func compile(t *testing.T, r Rule) *Rule {
	t.Helper()
	if r.CompletedAnnotation == "" {
		// Named after the rule, as a config that sets completedAnnotation per rule does:
		// these tests are about one rule's record, whatever its keys; the config names
		// records after taints (gate/config's records_test.go).
		r.CompletedAnnotation = "startup.k8s.io/completedAt." + r.Name
	}
	if r.PlacedAnnotation == "" {
		r.PlacedAnnotation = DefaultPlacedAnnotation + "." + r.Name
	}
	var errs Errors
	r.Compile("", &errs)
	if len(errs) > 0 {
		t.Fatalf("Compile(%+v): %v", r, errs)
	}
	return &r
}

func node(opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0), Labels: map[string]string{}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func tainted(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, cniTaint) }
func completed(n *corev1.Node) {
	n.Annotations = map[string]string{"startup.k8s.io/completedAt.cni": "1"}
}
func withCondition(t corev1.NodeConditionType, s corev1.ConditionStatus) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	}
}

func pod(ready bool) *corev1.Pod { return podSince(ready, t0) }

// podSince is the CNI Pod, Ready or not since at (its Ready condition's transition).
func podSince(ready bool, at time.Time) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cni", Namespace: "kube-system", CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{"app": "cni"}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(at)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: ready}}},
	}
}

// TestDecideRules covers what a rule decides beyond the single startup rule the gate's
// own table covers: condition-only rules, and a continuous rule after its first release.
func TestDecideRules(t *testing.T) {
	rd := Readiness{Annotation: "startup.k8s.io/ready"}
	cni := Rule{Name: "cni", Mode: Continuous, Taint: cniTaint, Components: []Component{{Name: "cni", Selector: "app=cni"}},
		SettleTime: metav1.Duration{Duration: 5 * time.Second}}
	startup := cni
	startup.Mode = Startup
	netOnly := Rule{Name: "net", Taint: cniTaint, Conditions: []ConditionRequirement{ParseConditionRequirement("example.com/NetworkReady=True")}}
	now := t0.Add(time.Minute)
	tests := []struct {
		name string
		rule Rule
		in   Input
		want Decision
		why  string
	}{
		{name: "startup, first hold, component ready: release", rule: startup,
			in: Input{Node: node(tainted), Pods: []*corev1.Pod{pod(true)}, Now: now}, want: Decision{Release: true, Met: true, ReadyAt: t0}},
		{name: "startup, released, component unready: nothing, ever", rule: startup,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{pod(false)}, Now: now, UnmetSince: t0}, want: Decision{}, why: "released"},
		{name: "condition-only rule holds while the condition is false", rule: netOnly,
			in: Input{Node: node(tainted, withCondition("example.com/NetworkReady", corev1.ConditionFalse)), Now: now}, want: Decision{}, why: "not True"},
		{name: "condition-only rule releases when the condition holds", rule: netOnly,
			in: Input{Node: node(tainted, withCondition("example.com/NetworkReady", corev1.ConditionTrue)), Now: now}, want: Decision{Release: true, Met: true}, why: "conditions hold"},
		{name: "condition-only rule: a missing condition does not hold", rule: netOnly,
			in: Input{Node: node(tainted), Now: now}, want: Decision{}, why: "not True"},
		{name: "continuous, released, ready, untainted: nothing", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{pod(true)}, Now: now}, want: Decision{Met: true}},
		{name: "continuous, released, just became unready: wait the settle time", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{podSince(false, now)}, Now: now}, want: Decision{RequeueAfter: 5 * time.Second}, why: "not ready"},
		{name: "continuous, unready within the settle time: wait the rest", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{podSince(false, now.Add(-2*time.Second))}, Now: now, UnmetSince: now.Add(-2 * time.Second)}, want: Decision{RequeueAfter: 3 * time.Second}},
		{name: "continuous, unready for the settle time: taint", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{podSince(false, now.Add(-5*time.Second))}, Now: now, UnmetSince: now.Add(-5 * time.Second)}, want: Decision{Taint: true}, why: "for 5s"},
		{name: "continuous, unready for a minute, first sighting (a restarted gate): taint at once", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{podSince(false, now.Add(-time.Minute))}, Now: now}, want: Decision{Taint: true}, why: "for 1m0s"},
		{name: "continuous, a sighting that missed a brief recovery: the Pod's transition restarts the clock", rule: cni,
			in: Input{Node: node(completed), Pods: []*corev1.Pod{podSince(false, now.Add(-time.Second))}, Now: now, UnmetSince: now.Add(-time.Minute)}, want: Decision{RequeueAfter: 4 * time.Second}},
		{name: "continuous, a condition false for the settle time: taint", rule: Rule{Name: "net", Mode: Continuous, Taint: cniTaint, Conditions: []ConditionRequirement{ParseConditionRequirement("example.com/NetworkReady=True")}, SettleTime: metav1.Duration{Duration: 5 * time.Second}},
			in: Input{Node: node(completed2("net"), withConditionSince("example.com/NetworkReady", corev1.ConditionFalse, now.Add(-6*time.Second))), Now: now}, want: Decision{Taint: true}},
		{name: "continuous, component Pod gone while its DaemonSet targets the node: unmet", rule: cni,
			in: Input{Node: node(completed), Expected: map[string]bool{"cni": true}, Now: now, UnmetSince: now.Add(-time.Minute)}, want: Decision{Taint: true}, why: "no Pod yet"},
		{name: "continuous, re-tainted and still unready: hold", rule: cni,
			in: Input{Node: node(completed, tainted), Pods: []*corev1.Pod{pod(false)}, Now: now}, want: Decision{}},
		{name: "continuous, re-tainted, ready again: release, completion kept", rule: cni,
			in: Input{Node: node(completed, tainted), Pods: []*corev1.Pod{pod(true)}, Now: now}, want: Decision{Release: true, Met: true}, why: "hold again"},
		{name: "continuous, first hold: like a startup rule", rule: cni,
			in: Input{Node: node(tainted), Pods: []*corev1.Pod{pod(false)}, Now: now}, want: Decision{}, why: "not ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := compile(t, tc.rule)
			checkDecision(t, Decide(r, rd, tc.in), tc.want, tc.why)
		})
	}
}

// TestCompileErrors: every error names the rule's place and the field.
func TestCompileErrors(t *testing.T) {
	ok := Rule{Name: "cni", Taint: cniTaint, Components: []Component{{Selector: "app=cni"}}, CompletedAnnotation: "a.io/done"}
	tests := []struct {
		name string
		mod  func(*Rule)
		want string
	}{
		{"continuous rules never evict", func(r *Rule) { r.Mode, r.Taint.Effect = Continuous, corev1.TaintEffectNoExecute }, `rules[2] "cni".taint.effect: "NoExecute": a continuous rule uses NoSchedule only`},
		{"unknown mode", func(r *Rule) { r.Mode = "sometimes" }, `rules[2] "cni".mode: "sometimes"`},
		{"bad name", func(r *Rule) { r.Name = "GPU_driver" }, `rules[2] "cni".name: "GPU_driver"`},
		{"no requirement", func(r *Rule) { r.Components = nil }, `rules[2] "cni".components: a rule needs at least one component or condition`},
		{"bad condition", func(r *Rule) { r.Conditions = []ConditionRequirement{ParseConditionRequirement("Ready")} }, `rules[2] "cni".conditions[0]: "Ready": must be Type=Status`},
		{"bad node selector", func(r *Rule) { r.NodeSelector = "pool in (" }, `rules[2] "cni".nodeSelector`},
		{"negative settle time", func(r *Rule) { r.SettleTime.Duration = -time.Second }, `rules[2] "cni".settleTime: -1s`},
		{"bad completion annotation", func(r *Rule) { r.CompletedAnnotation = "bad key" }, `rules[2] "cni".completedAnnotation`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			var errs Errors
			r.Compile(`rules[2] "cni"`, &errs)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want exactly one starting %q", errs, tc.want)
			}
		})
	}
}

// TestTaintMutations: a rule adds and removes only its own taint, and its completion once.
func TestTaintMutations(t *testing.T) {
	r := compile(t, Rule{Name: "cni", Taint: cniTaint, Components: []Component{{Selector: "app=cni"}}})
	other := corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	n := node()
	n.Spec.Taints = []corev1.Taint{other}
	if !r.AddTaint(n) || r.AddTaint(n) {
		t.Fatal("AddTaint should add once, then report no change")
	}
	r.Release(n, t0)
	if diff := cmp.Diff([]corev1.Taint{other}, n.Spec.Taints); diff != "" {
		t.Errorf("Release touched another taint (-want +got):\n%s", diff)
	}
	r.Release(n, t0.Add(time.Hour))
	if got := n.Annotations[r.CompletedAnnotation]; got != "1793534400" {
		t.Errorf("completion = %q, want the first release's time kept", got)
	}
	if r.AddTaint(n) {
		t.Error("a startup rule added its taint to a node it had released")
	}
}

func completed2(rule string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Annotations = map[string]string{"startup.k8s.io/completedAt." + rule: "1"} }
}

func withConditionSince(t corev1.NodeConditionType, s corev1.ConditionStatus, at time.Time) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)})
	}
}

// checkDecision compares a decision with want, its reason only by the part it must contain.
// checkDecision compares a decision with the one wanted, but for its reason (which must
// contain reason), its state and its evidence (TestTransitions judges those); a wanted
// Release or Taint implies its write.
func checkDecision(t *testing.T, got, want Decision, reason string) {
	t.Helper()
	switch {
	case want.Release && want.Write == WriteNone:
		want.Write = WriteRelease
	case want.Taint && want.Write == WriteNone:
		want.Write = WriteTaint
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Decision{}, "Reason", "State", "Boot", "Prints")); diff != "" {
		t.Errorf("Decide() (-want +got):\n%s\nreason: %q", diff, got.Reason)
	}
	if !strings.Contains(got.Reason, reason) {
		t.Errorf("Decide().Reason = %q, want it to contain %q", got.Reason, reason)
	}
}

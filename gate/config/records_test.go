package config

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// cniTaint is the taint of the rules these tests rename and re-key.
var cniTaint = corev1.Taint{Key: "example.com/cni-unready", Effect: corev1.TaintEffectNoSchedule}

// cniConfig is a config of one startup rule of that name holding cniTaint, gating reboots,
// maxHold 9s, validated.
func cniConfig(t *testing.T, name string, mod func(*rule.Rule)) *Config {
	t.Helper()
	return validConfig(t, func(c *Config) {
		r := rule.Rule{Name: name, Taint: cniTaint, OnReboot: rule.RebootGate, MaxHold: metav1.Duration{Duration: 9 * time.Second},
			Components: []rule.Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}}
		if mod != nil {
			mod(&r)
		}
		c.Rules = []rule.Rule{r}
	})
}

// cniPod is the CNI Pod of the node running its containers' gen-th start, Ready or not.
func cniPod(gen int, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cni", Namespace: "kube-system", Labels: map[string]string{"app": "cni"}, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "cni", Ready: ready, RestartCount: int32(gen),
				ContainerID: fmt.Sprintf("containerd://c%d", gen)}}},
	}
}

// settle decides and applies the decision's write on n, as the controller does, until a
// decision asks for no write, or for a release or a timeout, which it returns unapplied.
func settle(t *testing.T, r *rule.Rule, n *corev1.Node, pods []*corev1.Pod, now time.Time) rule.Decision {
	t.Helper()
	for range 5 {
		d := rule.Decide(r, rule.Readiness{}, rule.Input{Node: n, Pods: pods, Now: now})
		if d.Write == rule.WriteNone || d.Release || d.TimedOut {
			return d
		}
		r.Apply(d, n, now)
	}
	t.Fatal("no settled decision in 5 writes")
	return rule.Decision{}
}

// regated is a node that rule r released on boot b1 and re-gated after its reboot to b2, at
// regatedAt, as the gate's own writes leave it.
func regated(t *testing.T, r *rule.Rule, regatedAt time.Time) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0)}}
	n.Status.NodeInfo.BootID = "b1"
	r.AddTaint(n)
	if d := settle(t, r, n, []*corev1.Pod{cniPod(0, true)}, t0.Add(time.Minute)); !d.Release {
		t.Fatalf("first hold: %s (%s), want a release", d.State, d.Reason)
	}
	r.Apply(rule.Decide(r, rule.Readiness{}, rule.Input{Node: n, Pods: []*corev1.Pod{cniPod(0, true)}, Now: t0.Add(time.Minute)}), n, t0.Add(time.Minute))
	n.Status.NodeInfo.BootID = "b2"
	settle(t, r, n, []*corev1.Pod{cniPod(0, true)}, regatedAt)
	if st, why := rule.StateOf(r, rule.Readiness{}, rule.Input{Node: n, Pods: []*corev1.Pod{cniPod(0, true)}, Now: regatedAt}); st != rule.StateRegated {
		t.Fatalf("after the reboot: %s (%s), want %s", st, why, rule.StateRegated)
	}
	return n
}

// TestRecordsNamedAfterTheTaint: a rule's keys on a node follow its taint, not its name; the
// contract's taint keeps the bare completedAt.
func TestRecordsNamedAfterTheTaint(t *testing.T) {
	cni, net := cniConfig(t, "cni", nil).EffectiveRules()[0], cniConfig(t, "net", nil).EffectiveRules()[0]
	if cni.CompletedAnnotation != net.CompletedAnnotation || cni.PlacedAnnotation != net.PlacedAnnotation {
		t.Errorf("renamed: keys %s, %s; were %s, %s", net.CompletedAnnotation, net.PlacedAnnotation, cni.CompletedAnnotation, cni.PlacedAnnotation)
	}
	if want := "startup.k8s.io/completedAt.example.com.cni-unready"; cni.CompletedAnnotation != want {
		t.Errorf("completion annotation %s, want %s", cni.CompletedAnnotation, want)
	}
	rekeyed := cniConfig(t, "cni", func(r *rule.Rule) { r.Taint.Key = "example.com/warming" }).EffectiveRules()[0]
	if rekeyed.CompletedAnnotation == cni.CompletedAnnotation || rekeyed.PlacedAnnotation == cni.PlacedAnnotation {
		t.Errorf("re-keyed: keys %s, %s, the old key's", rekeyed.CompletedAnnotation, rekeyed.PlacedAnnotation)
	}
	contract := validConfig(t, func(c *Config) {
		c.Rules = []rule.Rule{{Name: "warm", Taint: c.Taint, Components: c.Components}}
	}).EffectiveRules()[0]
	if contract.CompletedAnnotation != DefaultCompletedAnnotation || contract.PlacedAnnotation != rule.DefaultPlacedAnnotation+".default" {
		t.Errorf("the contract's taint in a rule named warm: keys %s, %s; want %s, %s.default", contract.CompletedAnnotation, contract.PlacedAnnotation,
			DefaultCompletedAnnotation, rule.DefaultPlacedAnnotation)
	}
	long := rule.RecordName(corev1.Taint{Key: "node.kubernetes-example.example.com/a-very-long-warming-taint-key", Effect: corev1.TaintEffectNoExecute})
	if len(long) > 41 || !strings.HasPrefix(long, "a-very-long") {
		t.Errorf("record %q: %d characters, want at most 41, the key's name part first", long, len(long))
	}
}

// TestRenameWhileRegated (issue 72, defect 1): a node re-gated after a reboot, then its rule
// renamed (same taint), waits out maxHold from the re-gate, as concepts.md says. On 424467d
// the new name had no record, counted maxHold from the Node's creation and released the node
// at once, before its warm-up (20 Pods bound early in a run of five nodes). Renamed away and
// back, the same.
func TestRenameWhileRegated(t *testing.T) {
	regatedAt := t0.Add(time.Hour)
	for _, names := range [][]string{{"cni", "net"}, {"cni", "net", "cni"}} {
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			n := regated(t, cniConfig(t, names[0], nil).EffectiveRules()[0], regatedAt)
			for _, name := range names[1:] {
				r := cniConfig(t, name, nil).EffectiveRules()[0]
				settle(t, r, n, []*corev1.Pod{cniPod(0, true)}, regatedAt.Add(time.Second))
			}
			r := cniConfig(t, names[len(names)-1], nil).EffectiveRules()[0]
			old := []*corev1.Pod{cniPod(0, true)} // the old boot's readiness
			if d := settle(t, r, n, old, regatedAt.Add(8*time.Second)); d.TimedOut || d.Release || !r.HasTaint(n) {
				t.Errorf("8s after the re-gate: %s, timed out %v, release %v (%s); want held for maxHold 9s from it", d.State, d.TimedOut, d.Release, d.Reason)
			}
			if d := settle(t, r, n, old, regatedAt.Add(10*time.Second)); !d.TimedOut {
				t.Errorf("10s after the re-gate: %s, not timed out (%s)", d.State, d.Reason)
			}
			if d := settle(t, r, n, []*corev1.Pod{cniPod(1, true)}, regatedAt.Add(5*time.Second)); !d.Release || d.TimedOut {
				t.Errorf("ready on the new boot: release %v, timed out %v (%s); want released", d.Release, d.TimedOut, d.Reason)
			}
		})
	}
}

// TestRenameLeavesAnOperatorsTaint (issue 72, defect 3): a node the rule released, whose
// taint an operator put back by hand, is not the gate's to lift, under the rule's new name
// as under the old. On 424467d the new name found the taint and no record, held the node as
// a first hold, and released it: it lifted the operator's taint.
func TestRenameLeavesAnOperatorsTaint(t *testing.T) {
	cni := cniConfig(t, "cni", func(r *rule.Rule) { r.OnReboot = rule.RebootIgnore }).EffectiveRules()[0]
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0)}}
	cni.AddTaint(n)
	pods := []*corev1.Pod{cniPod(0, true)}
	cni.Apply(rule.Decide(cni, rule.Readiness{}, rule.Input{Node: n, Pods: pods, Now: t0.Add(time.Minute)}), n, t0.Add(time.Minute))
	n.Spec.Taints = append(n.Spec.Taints, cniTaint) // the operator's, no mark
	n.Labels = map[string]string{"karpenter.sh/initialized": "true"}
	for _, name := range []string{"cni", "net"} {
		r := cniConfig(t, name, func(r *rule.Rule) { r.OnReboot = rule.RebootIgnore }).EffectiveRules()[0]
		d := rule.Decide(r, rule.Readiness{}, rule.Input{Node: n, Pods: pods, Now: t0.Add(time.Hour)})
		if d.State != rule.StateForeign || d.Release || d.Write != rule.WriteNone {
			t.Errorf("named %s: %s, write %q, release %v (%s); want %s, nothing written", name, d.State, d.Write, d.Release, d.Reason, rule.StateForeign)
		}
	}
}

// TestUpgradeFromNameKeyedRecords: the previous release kept each rule's record under the
// rule's name (completedAt.<name> and its suffixes, placed.<name>). A cluster it left with
// nodes held, released, re-gated, replacing and orphaned upgrades with nothing stranded and
// nothing released early: Migrate moves each record to the rule's taint, and the states and
// decisions after it are the ones the previous release's records meant.
func TestUpgradeFromNameKeyedRecords(t *testing.T) {
	cfg := cniConfig(t, "cni", func(r *rule.Rule) { r.TimeoutPolicy = rule.TimeoutReplace })
	r := cfg.EffectiveRules()[0]
	const done, mark = "startup.k8s.io/completedAt.cni", "startup.k8s.io/placed.cni"
	regatedAt := t0.Add(time.Hour)
	value := rule.PlacedValue(cniTaint, "")
	old := corev1.Taint{Key: "example.com/removed", Effect: corev1.TaintEffectNoSchedule}
	nodes := []struct {
		name        string
		annotations map[string]string
		taints      []corev1.Taint
		boot        string
		pods        []*corev1.Pod
		state       rule.State
		orphans     int
	}{
		{name: "held", annotations: map[string]string{mark: value}, taints: []corev1.Taint{cniTaint}, boot: "b1",
			pods: []*corev1.Pod{cniPod(0, false)}, state: rule.StateHeld},
		{name: "released", annotations: map[string]string{done: "1", done + "_bootID": "b1", done + "_readiness": ""}, boot: "b1",
			pods: []*corev1.Pod{cniPod(0, false)}, state: rule.StateReleased},
		{name: "re-gated", annotations: map[string]string{done: "1", done + "_bootID": "b1", done + "_readiness": "",
			done + "_regatedAt": strconv.FormatInt(regatedAt.Unix(), 10) + ",b2", mark: value}, taints: []corev1.Taint{cniTaint}, boot: "b2",
			pods: []*corev1.Pod{cniPod(0, false)}, state: rule.StateRegated},
		{name: "replacing", annotations: map[string]string{mark: value, done + "_replaced": strconv.FormatInt(t0.Unix(), 10)},
			taints: []corev1.Taint{cniTaint}, boot: "b1", pods: []*corev1.Pod{cniPod(0, false)}, state: rule.StateReplacing},
		{name: "orphaned (a removed rule's taint) and held", annotations: map[string]string{mark: value, "startup.k8s.io/placed.removed": rule.PlacedValue(old, "")},
			taints: []corev1.Taint{cniTaint, old}, boot: "b1", pods: []*corev1.Pod{cniPod(0, false)}, state: rule.StateHeld, orphans: 1},
	}
	for _, tc := range nodes {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0), Annotations: tc.annotations}}
			n.Spec.Taints, n.Status.NodeInfo.BootID = tc.taints, tc.boot
			if !cfg.Legacy(n) {
				t.Fatalf("Legacy: false for %v", n.Annotations)
			}
			cfg.Migrate(n)
			if cfg.Legacy(n) {
				t.Errorf("Legacy after Migrate: true for %v", n.Annotations)
			}
			in := rule.Input{Node: n, Pods: tc.pods, Now: regatedAt.Add(5 * time.Second)}
			if st, why := rule.StateOf(r, rule.Readiness{}, in); st != tc.state {
				t.Errorf("state %s (%s), want %s; annotations %v", st, why, tc.state, n.Annotations)
			}
			if d := rule.Decide(r, rule.Readiness{}, in); d.Release || d.Write == rule.WriteRelease || d.Write == rule.WriteRemove {
				t.Errorf("decision: %s write %q, release %v (%s); want nothing released", d.State, d.Write, d.Release, d.Reason)
			}
			if got := len(cfg.Orphans(n)); got != tc.orphans {
				t.Errorf("%d orphans, want %d", got, tc.orphans)
			}
		})
	}
}

// TestInRulesKeepsTheRule: the default rule written out as a rule is the same rule, with the
// same record: an edit of it that changes nothing changes nothing.
func TestInRulesKeepsTheRule(t *testing.T) {
	top := validConfig(t, func(c *Config) {
		c.MaxHold, c.TimeoutPolicy, c.RequiredCondition = metav1.Duration{Duration: time.Minute}, rule.TimeoutKeep, "Ready=True"
	})
	in := *top
	in.InRules()
	if err := in.Validate(); err != nil {
		t.Fatalf("Validate() after InRules = %v", err)
	}
	a, b := top.EffectiveRules()[0], in.EffectiveRules()[0]
	if a.CompletedAnnotation != b.CompletedAnnotation || a.PlacedAnnotation != b.PlacedAnnotation || a.NodeSelector != b.NodeSelector ||
		a.MaxHold != b.MaxHold || a.TimeoutPolicy != b.TimeoutPolicy || len(b.Conditions) != 1 {
		t.Errorf("InRules: %+v; was %+v", b, a)
	}
}

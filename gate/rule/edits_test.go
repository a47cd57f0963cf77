package rule

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestContinuousMadeStartupReleasesItsRetaint (issue 72, defect 2): a continuous rule put
// its taint back on a released node (its requirements failed), then the operator made it a
// startup rule. The taint is the gate's own, marked as the rule's: the startup rule takes it
// off once the requirements hold, as it does a taint the autoscaler put back. Read as
// someone else's (foreign), it stayed on for good.
func TestContinuousMadeStartupReleasesItsRetaint(t *testing.T) {
	continuous := compile(t, Rule{Name: "cni", Mode: Continuous, Taint: cniTaint, Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}})
	startup := compile(t, Rule{Name: "cni", Taint: cniTaint, Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}})
	n := node(annotated(cniDone, "1"))
	unready := []*corev1.Pod{podSince(false, t0)}
	// The continuous rule's re-taint, as the controller writes it.
	if d := Decide(continuous, Readiness{}, Input{Node: n, Pods: unready, Now: t0.Add(time.Hour), UnmetSince: t0}); d.Write != WriteTaint {
		t.Fatalf("continuous rule, requirements failing: write %q (%s), want a re-taint", d.Write, d.Reason)
	} else {
		continuous.Apply(d, n, t0.Add(time.Hour))
	}
	if !startup.HasTaint(n) {
		t.Fatal("no taint after the re-taint")
	}
	if d := Decide(startup, Readiness{}, Input{Node: n, Pods: unready, Now: t0.Add(2 * time.Hour)}); d.Release {
		t.Errorf("made a startup rule, requirements failing: released (%s)", d.Reason)
	}
	d := Decide(startup, Readiness{}, Input{Node: n, Pods: []*corev1.Pod{podSince(true, t0)}, Now: t0.Add(2 * time.Hour)})
	if !d.Release || d.State == StateForeign {
		t.Errorf("made a startup rule, requirements holding: %s, release %v (%s); want its own re-taint taken off", d.State, d.Release, d.Reason)
	}
	// A taint put back by hand carries no mark: still the operator's.
	byHand := node(annotated(cniDone, "1"), tainted)
	if st, _ := StateOf(startup, Readiness{}, Input{Node: byHand, Pods: []*corev1.Pod{podSince(true, t0)}, Now: t0}); st != StateForeign {
		t.Errorf("a taint put back by hand: %s, want %s", st, StateForeign)
	}
}

package rule

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRenameKeepsTheRegateClock (issue 72, defect 1): a node re-gated after a reboot, then
// its rule renamed with the same key, waits out maxHold from the re-gate, as concepts.md
// says, not from the Node's creation: counted from there, it timed out at once and the node
// was released before its warm-up (20 Pods bound early in a run of five nodes).
func TestRenameKeepsTheRegateClock(t *testing.T) {
	regatedAt := t0.Add(time.Hour) // regatedFor's
	for _, name := range []string{"cni", "net"} {
		t.Run("named "+name, func(t *testing.T) {
			r := rebootRule(t, func(r *Rule) {
				r.Name, r.ReleasedAnnotation = name, "startup.k8s.io/completedAt"
				r.MaxHold = metav1.Duration{Duration: 9 * time.Second}
			})
			n := node(regatedFor("b2"), onBoot("b2"))
			pods := []*corev1.Pod{gen(0, true)} // the old boot's readiness
			for _, now := range []time.Time{regatedAt.Add(time.Second), regatedAt.Add(8 * time.Second)} {
				d := settle(r, n, pods, now)
				if d.TimedOut || d.Release || d.Replace || !r.HasTaint(n) {
					t.Errorf("%s after the re-gate: %s, timed out %v, release %v (%s); want held until %s after it",
						now.Sub(regatedAt), d.State, d.TimedOut, d.Release, d.Reason, r.MaxHold.Duration)
				}
			}
			if d := settle(r, n, pods, regatedAt.Add(10*time.Second)); !d.TimedOut {
				t.Errorf("10s after the re-gate: %s, not timed out (%s); maxHold is 9s", d.State, d.Reason)
			}
		})
	}
}

// TestRenamedBackKeepsTheRegateClock (defect 1's second half): rule cni renamed net, net
// re-gates the node, and the name goes back to cni. The node is cni's released node with a
// re-gate that net made: cni holds it on, counting maxHold from net's re-gate, not from a
// re-gate time it has none of (zero: timed out at once).
func TestRenamedBackKeepsTheRegateClock(t *testing.T) {
	regatedAt := t0.Add(time.Hour)
	r := rebootRule(t, func(r *Rule) {
		r.ReleasedAnnotation = "startup.k8s.io/completedAt"
		r.MaxHold = metav1.Duration{Duration: 9 * time.Second}
	})
	n := node(releasedOn("b1", 0), tainted, onBoot("b2"),
		annotated(DefaultPlacedAnnotation+".net", PlacedValue(cniTaint, "")),
		annotated("startup.k8s.io/completedAt.net", "1"),
		annotated("startup.k8s.io/completedAt.net_regatedAt", strconv.FormatInt(regatedAt.Unix(), 10)+",b2"))
	pods := []*corev1.Pod{gen(0, true)}
	if st, why := StateOf(r, Readiness{}, Input{Node: n, Pods: pods, Now: regatedAt}); st != StateRegated {
		t.Fatalf("state %s (%s), want %s", st, why, StateRegated)
	}
	if d := Decide(r, Readiness{}, Input{Node: n, Pods: pods, Now: regatedAt.Add(5 * time.Second)}); d.TimedOut || d.Release {
		t.Errorf("5s after net's re-gate: timed out %v, release %v (%s); want held for maxHold 9s from it", d.TimedOut, d.Release, d.Reason)
	}
	if d := Decide(r, Readiness{}, Input{Node: n, Pods: pods, Now: regatedAt.Add(10 * time.Second)}); !d.TimedOut {
		t.Errorf("10s after net's re-gate: not timed out (%s)", d.Reason)
	}
	// Ready again on the new boot: released.
	if d := Decide(r, Readiness{}, Input{Node: n, Pods: []*corev1.Pod{gen(1, true)}, Now: regatedAt.Add(5 * time.Second)}); !d.Release || d.TimedOut {
		t.Errorf("ready on the new boot: release %v, timed out %v (%s); want released", d.Release, d.TimedOut, d.Reason)
	}
}

// settle decides and applies the decision's write on n, as the controller does, until a
// decision asks for no write or a release or timeout, which it returns unapplied.
func settle(r *Rule, n *corev1.Node, pods []*corev1.Pod, now time.Time) Decision {
	for range 5 {
		d := Decide(r, Readiness{}, Input{Node: n, Pods: pods, Now: now})
		if d.Write == WriteNone || d.Release || d.TimedOut {
			return d
		}
		r.Apply(d, n, now)
	}
	panic("no settled decision in 5 writes")
}

package rule

import (
	"fmt"
	"slices"
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

// The reboot records of rebootRule's completion annotation.
const (
	cniDone     = "startup.k8s.io/completedAt.cni"
	cniBoot     = cniDone + "_bootID"
	cniEvidence = cniDone + "_readiness"
	cniRegated  = cniDone + "_regatedAt"
	cniPlaced   = DefaultPlacedAnnotation + ".cni"
)

// gen is the CNI Pod running its containers' gen-th start: container ID and restart count
// as a kubelet writes them; Ready (since t0, by the kubelet's clock) or not.
func gen(g int32, ready bool) *corev1.Pod {
	p := podSince(ready, t0)
	p.UID = "cni-uid"
	p.Status.ContainerStatuses[0].ContainerID = fmt.Sprintf("containerd://c-%d", g)
	p.Status.ContainerStatuses[0].RestartCount = g
	return p
}

// fp is the fingerprint of the CNI Pod's gen-th start.
func fp(g int32) string { return Fingerprint(gen(g, true)) }

// releasedOn: the rule released the node on boot b, recording the given starts' readiness.
func releasedOn(b string, gens ...int32) func(*corev1.Node) {
	return func(n *corev1.Node) {
		annotated(cniDone, "1")(n)
		annotated(cniBoot, b)(n)
		var prints []string
		for _, g := range gens {
			prints = append(prints, fp(g))
		}
		annotated(cniEvidence, strings.Join(prints, ","))(n)
	}
}

// regatedFor: released on b1 with start 0's readiness, re-gated for boot b.
func regatedFor(b string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		releasedOn("b1", 0)(n)
		tainted(n)
		annotated(cniPlaced, PlacedValue(cniTaint, ""))(n)
		annotated(cniRegated, strconv.FormatInt(t0.Add(time.Hour).Unix(), 10)+","+b)(n)
	}
}

// TestTransitions is the state machine of a node under a startup rule that gates reboots,
// as a table: a node in a state meets an event, which leaves it in a state; the decision
// there asks for one write, and after that write (Apply, the very mutation the controller
// makes) the node is in the state the row names. Every hole the reboot and config paths had
// is a row here.
func TestTransitions(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	placed := annotated(cniPlaced, PlacedValue(cniTaint, ""))
	registered := labelled(KarpenterRegisteredLabel, "true")
	tests := []struct {
		name string
		rule func(*Rule)
		node *corev1.Node
		pods []*corev1.Pod
		// state is the node's state with the event applied; write is what its decision asks.
		state State
		write Write
		// after is the state once the write is made (the same state when none).
		after State
	}{
		{name: "held, init Ready: released", node: node(tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateHeld, write: WriteRelease, after: StateReleased},
		{name: "held, not ready: held", node: node(tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, false)},
			state: StateHeld, after: StateHeld},
		{name: "released, same boot: nothing", node: node(releasedOn("b1", 0), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateReleased, after: StateReleased},
		{name: "released, the kubelet reports no boot: nothing", node: node(releasedOn("b1", 0)), pods: []*corev1.Pod{gen(0, true)},
			state: StateReleased, after: StateReleased},
		{name: "released before boots were recorded: recorded", node: node(annotated(cniDone, "1"), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateBootUnrecorded, write: WriteRecord, after: StateReleased},
		{name: "released, containers restarted on the same boot: recorded", node: node(releasedOn("b1", 0), onBoot("b1")), pods: []*corev1.Pod{gen(1, true)},
			state: StateRestarted, write: WriteRecord, after: StateReleased},
		{name: "released, containers restarted, not ready yet: nothing", node: node(releasedOn("b1", 0), onBoot("b1")), pods: []*corev1.Pod{gen(1, false)},
			state: StateReleased, after: StateReleased},
		{name: "reboot, the Pod still shows the old boot's readiness: re-gated", node: node(releasedOn("b1", 0), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)},
			state: StateRebooted, write: WriteRegate, after: StateRegated},
		{name: "reboot, new containers not ready: re-gated", node: node(releasedOn("b1", 0), onBoot("b2")), pods: []*corev1.Pod{gen(1, false)},
			state: StateRebooted, write: WriteRegate, after: StateRegated},
		{name: "reboot and warm-up unseen (gate down, suspended, onReboot ignore): recorded, no taint",
			node: node(releasedOn("b1", 0), onBoot("b2")), pods: []*corev1.Pod{gen(1, true)},
			state: StateRebootedReady, write: WriteRecord, after: StateReleased},
		{name: "reboot of a node released before evidence was recorded: re-gated on what is Ready",
			node: node(annotated(cniDone, "1"), annotated(cniBoot, "b1"), onBoot("b2")), pods: []*corev1.Pod{gen(1, true)},
			state: StateRebooted, write: WriteRegate, after: StateRegated},
		{name: "reboot, no init Pod yet: re-gated", node: node(releasedOn("b1", 0), onBoot("b2")),
			state: StateRebooted, write: WriteRegate, after: StateRegated},
		{name: "re-gated, new containers Ready: released", node: node(regatedFor("b2"), onBoot("b2")), pods: []*corev1.Pod{gen(1, true)},
			state: StateRegated, write: WriteRelease, after: StateReleased},
		{name: "re-gated, the old boot's readiness: held", node: node(regatedFor("b2"), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)},
			state: StateRegated, after: StateRegated},
		{name: "re-gated, the early-ready annotation survives a reboot: held", node: node(regatedFor("b2"), onBoot("b2")),
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := gen(1, false)
				p.Annotations = map[string]string{"startup.k8s.io/ready": "true"}
				return p
			}()},
			state: StateRegated, after: StateRegated},
		{name: "re-gated, rebooted again before its readiness was seen: waits for the new boot",
			node: node(regatedFor("b2"), onBoot("b3")), pods: []*corev1.Pod{gen(1, true)},
			state: StateRebootedAgain, write: WriteStale, after: StateRegated},
		{name: "re-gated, onReboot switched to ignore: released", rule: func(r *Rule) { r.OnReboot = RebootIgnore },
			node: node(regatedFor("b2"), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)},
			state: StateRegateDropped, write: WriteRemove, after: StateReleased},
		{name: "re-gated, taint removed by hand: recorded", node: node(regatedFor("b2"), onBoot("b2"), func(n *corev1.Node) { n.Spec.Taints = nil }),
			pods: []*corev1.Pod{gen(0, true)}, state: StateRegateRemoved, write: WriteRecord, after: StateReleased},
		{name: "re-gated, rule suspended: nothing", rule: func(r *Rule) { r.Suspend = true },
			node: node(regatedFor("b2"), onBoot("b2")), pods: []*corev1.Pod{gen(1, true)}, state: StateSuspended, after: StateSuspended},
		{name: "rebooted, rule suspended: nothing", rule: func(r *Rule) { r.Suspend = true },
			node: node(releasedOn("b1", 0), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)}, state: StateSuspended, after: StateSuspended},
		{name: "held, selector narrowed: the rule's taint comes off", rule: func(r *Rule) { r.NodeSelector = "pool=gpu" },
			node: node(tainted, placed, onBoot("b1")), state: StateLeft, write: WriteRemove, after: StateOutside},
		{name: "re-gated, selector narrowed: the rule's taint comes off", rule: func(r *Rule) { r.NodeSelector = "pool=gpu" },
			node: node(regatedFor("b2"), onBoot("b2")), state: StateLeft, write: WriteRemove, after: StateOutside},
		{name: "a taint set by hand on a node outside the selector: left", rule: func(r *Rule) { r.NodeSelector = "pool=gpu" },
			node: node(tainted, onBoot("b1")), state: StateOutside, after: StateOutside},
		{name: "rebooted, selector narrowed: nothing", rule: func(r *Rule) { r.NodeSelector = "pool=gpu" },
			node: node(releasedOn("b1", 0), onBoot("b2")), state: StateOutside, after: StateOutside},
		{name: "held, rule now a dry run, not ready: it would hold", rule: func(r *Rule) { r.DryRun = true },
			node: node(tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, false)}, state: StateDryRun, after: StateDryRun},
		{name: "held, rule now a dry run: nothing written", rule: func(r *Rule) { r.DryRun = true },
			node: node(tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, true)}, state: StateDryRun, write: WriteRelease, after: StateDryRun},
		{name: "taint back at registration, same boot: released again", node: node(releasedOn("b1", 0), tainted, registered, onBoot("b1")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateReturned, write: WriteRelease, after: StateReleased},
		{name: "taint back at registration after a reboot: a re-gate", node: node(releasedOn("b1", 0), tainted, registered, onBoot("b2")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateRebooted, write: WriteRegate, after: StateRegated},
		{name: "taint back on a do-not-sync-taints node: someone else's", node: node(releasedOn("b1", 0), tainted, registered,
			labelled(KarpenterDoNotSyncTaintsLabel, "true"), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)}, state: StateForeign, after: StateForeign},
		{name: "taint back on an initialized node: someone else's", node: node(releasedOn("b1", 0), tainted, registered,
			labelled(KarpenterInitializedLabel, "true"), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)}, state: StateForeign, after: StateForeign},
		{name: "held, booted again since readiness was recorded: that readiness is stale",
			node: node(tainted, placed, annotated(cniBoot, "b1"), annotated(cniEvidence, fp(0)), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)},
			state: StateHeldRebooted, write: WriteStale, after: StateHeld},
		{name: "held, readiness recorded stale: held", node: node(tainted, placed, annotated(cniBoot, "b2"), annotated(cniEvidence, fp(0)), onBoot("b2")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateHeld, after: StateHeld},
		{name: "came up untainted, init Ready: nothing written (backfill's)", node: node(onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateUntainted, after: StateUntainted},
		{name: "released under another record, init Ready: recorded as released, boot and readiness",
			rule: func(r *Rule) { r.ReleasedAnnotation = "startup.k8s.io/completedAt" }, node: node(annotated("startup.k8s.io/completedAt", "1"), onBoot("b1")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateAdopting, write: WriteAdopt, after: StateReleased},
		{name: "released under another rule, this one's init not Ready: recorded as released all the same",
			rule: func(r *Rule) { r.ReleasedAnnotation = "startup.k8s.io/completedAt" }, node: node(annotated("startup.k8s.io/completedAt.gpu", "1"), onBoot("b1")),
			pods: []*corev1.Pod{gen(0, false)}, state: StateAdopting, write: WriteAdopt, after: StateReleased},
		{name: "released under another record on an earlier boot: that record taken, then re-gated",
			rule: func(r *Rule) { r.ReleasedAnnotation = "startup.k8s.io/completedAt" },
			node: node(annotated("startup.k8s.io/completedAt.old", "1"), annotated("startup.k8s.io/completedAt.old_bootID", "b1"),
				annotated("startup.k8s.io/completedAt.old_readiness", fp(0)), onBoot("b2")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateAdopting, write: WriteAdopt, after: StateRebooted},
		{name: "re-gated under another taint's record, now an orphan: adopted, then re-gated under the rule's own taint",
			rule: func(r *Rule) { r.Taint.Key, r.ReleasedAnnotation = "example.com/warming", "startup.k8s.io/completedAt" },
			node: node(func(n *corev1.Node) {
				annotated("startup.k8s.io/completedAt.old", "1")(n)
				annotated("startup.k8s.io/completedAt.old_bootID", "b1")(n)
				annotated("startup.k8s.io/completedAt.old_readiness", fp(0))(n)
				annotated("startup.k8s.io/completedAt.old_regatedAt", strconv.FormatInt(t0.Unix(), 10)+",b2")(n)
				annotated(DefaultPlacedAnnotation+".old", PlacedValue(cniTaint, ""))(n)
				tainted(n)
			}, onBoot("b2")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateAdopting, write: WriteAdopt, after: StateRebooted},
		{name: "only another rule's boot record: not in service", rule: func(r *Rule) { r.ReleasedAnnotation = "startup.k8s.io/completedAt" },
			node: node(annotated("startup.k8s.io/completedAt_bootID", "b1"), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateUntainted, after: StateUntainted},
		{name: "held under a taint no rule has (an orphan): the rule joins the hold",
			rule: func(r *Rule) { r.Taint.Key = "example.com/warming" },
			node: node(tainted, annotated(DefaultPlacedAnnotation+".old", PlacedValue(cniTaint, "")), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateJoining, write: WriteJoin, after: StateHeld},
		{name: "another rule holds the node, this one's taint not on: joins the hold",
			rule: func(r *Rule) {
				r.PeerTaints = []corev1.Taint{{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
			},
			node: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
			}, onBoot("b1")),
			pods: []*corev1.Pod{gen(0, true)}, state: StateJoining, write: WriteJoin, after: StateHeld},
		{name: "released by a gate before the evidence, same boot: its readiness recorded",
			node: node(annotated(cniDone, "1"), annotated(cniBoot, "b1"), onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateBootUnrecorded, write: WriteRecord, after: StateReleased},
		{name: "re-gated by a gate before the evidence, Ready since before the re-gate: held",
			node: node(annotated(cniDone, "1"), annotated(cniBoot, "b1"), tainted, placed,
				annotated(cniRegated, strconv.FormatInt(t0.Add(time.Hour).Unix(), 10)+",b2"), onBoot("b2")),
			pods: []*corev1.Pod{gen(1, true)}, state: StateRegated, after: StateRegated},
		{name: "held, new containers Ready after stale readiness: released", node: node(tainted, placed, annotated(cniBoot, "b2"), annotated(cniEvidence, fp(0)), onBoot("b2")),
			pods: []*corev1.Pod{gen(1, true)}, state: StateHeld, write: WriteRelease, after: StateReleased},
		{name: "continuous, released, its component unready past the settle time: re-tainted", rule: continuous,
			node: node(releasedOn("b1", 0), onBoot("b1")), pods: []*corev1.Pod{gen(0, false)},
			state: StateReleased, write: WriteTaint, after: StateRetainted},
		{name: "continuous, re-tainted, still unready: held", rule: continuous,
			node: node(releasedOn("b1", 0), tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, false)},
			state: StateRetainted, after: StateRetainted},
		{name: "continuous, re-tainted, Ready again: released", rule: continuous,
			node: node(releasedOn("b1", 0), tainted, placed, onBoot("b1")), pods: []*corev1.Pod{gen(0, true)},
			state: StateRetainted, write: WriteRelease, after: StateReleased},
		{name: "continuous, in service under another taint's record, unready: not adopted yet",
			rule: func(r *Rule) { continuous(r); r.ReleasedAnnotation = "startup.k8s.io/completedAt" },
			node: node(annotated("startup.k8s.io/completedAt", "1"), annotated("startup.k8s.io/completedAt_bootID", "b1"), onBoot("b1")),
			pods: []*corev1.Pod{gen(0, false)}, state: StateAdopting, after: StateAdopting},
		{name: "a condition rule: decided by its conditions", rule: func(r *Rule) {
			r.Mode, r.OnReboot, r.Components = Condition, "", nil
			r.Match = []Match{{Type: "example.com/NetworkReady", Status: "False"}}
		}, node: node(onBoot("b1")), state: StateCondition, after: StateCondition},
	}
	// Moves the table has that other tests walk: a replacement is the controller's write, not
	// a decision's (TestReplaceTransitions).
	elsewhere := map[State][]Move{
		StateHeld:      {{WriteReplace, StateReplacing}},
		StateRegated:   {{WriteReplace, StateReplacing}},
		StateReplacing: {stays(StateReplacing)},
	}
	walked := map[State][]Move{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rebootRule(t, tc.rule)
			rd := Readiness{Annotation: "startup.k8s.io/ready"}
			in := Input{Node: tc.node, Pods: tc.pods, Now: now}
			d := Decide(r, rd, in)
			if d.State != tc.state || d.Write != tc.write {
				t.Fatalf("Decide() in state %q asks %q (%s); want state %q, write %q", d.State, d.Write, d.Reason, tc.state, tc.write)
			}
			if st, _ := StateOf(r, rd, in); st != d.State {
				t.Errorf("StateOf() = %q, Decide() decided in %q", st, d.State)
			}
			n := tc.node.DeepCopy()
			if !r.DryRun && d.Write != WriteNone && !r.Apply(d, n, now) {
				t.Fatalf("Apply(%q) wrote nothing on the node it was decided on", d.Write)
			}
			in.Node = n
			if st, why := StateOf(r, rd, in); st != tc.after {
				t.Errorf("after the write %q: state %q (%s), want %q; annotations %v, taints %v", d.Write, st, why, tc.after, n.Annotations, n.Spec.Taints)
			}
			m := Move{Write: tc.write, Next: tc.after}
			if !Allows(tc.state, m) {
				t.Errorf("Table has no move %q to %q out of %q", m.Write, m.Next, tc.state)
			}
			walked[tc.state] = append(walked[tc.state], m)
		})
	}
	for _, row := range Table {
		for _, m := range row.Moves {
			if !slices.Contains(walked[row.State], m) && !slices.Contains(elsewhere[row.State], m) {
				t.Errorf("Table's move %q to %q out of %q: no case walks it", m.Write, m.Next, row.State)
			}
		}
	}
}

// continuous makes rebootRule a continuous rule, which does not gate reboots.
func continuous(r *Rule) {
	r.Mode, r.OnReboot, r.SettleTime = Continuous, RebootIgnore, metav1.Duration{Duration: 5 * time.Second}
}

// TestApplyRechecksTheBoot: a write of a rule that gates reboots is made only on the boot it
// was decided on. A release decided on one boot's readiness, met by a node that booted again
// (a conflict, then a fresh read), records that readiness as stale instead: decided again,
// the node stays held until the new boot's own.
func TestApplyRechecksTheBoot(t *testing.T) {
	r := rebootRule(t, nil)
	rd := Readiness{}
	held := node(tainted, annotated(cniPlaced, PlacedValue(cniTaint, "")), onBoot("b1"))
	d := Decide(r, rd, Input{Node: held, Pods: []*corev1.Pod{gen(0, true)}, Now: t0})
	if d.Write != WriteRelease || d.Boot != "b1" {
		t.Fatalf("Decide() = %q on boot %q, want a release on b1", d.Write, d.Boot)
	}
	fresh := held.DeepCopy()
	fresh.Status.NodeInfo.BootID = "b2"
	if r.Apply(d, fresh, t0) {
		t.Fatal("Apply() released a node that booted again since the decision")
	}
	if !r.HasTaint(fresh) || fresh.Annotations[cniBoot] != "b2" || !r.Evidence(fresh)[fp(0)] {
		t.Fatalf("after Apply: taints %v, annotations %v; want held, boot b2, start 0's readiness stale", fresh.Spec.Taints, fresh.Annotations)
	}
	if d := Decide(r, rd, Input{Node: fresh, Pods: []*corev1.Pod{gen(0, true)}, Now: t0}); d.Write != WriteNone {
		t.Errorf("decided again on the stale readiness: %q (%s)", d.Write, d.Reason)
	}
	for _, w := range []Write{WriteRegate, WriteRecord, WriteStale} {
		n := node(releasedOn("b1", 0), onBoot("b3"))
		if r.Apply(Decision{Write: w, Boot: "b2"}, n, t0) {
			t.Errorf("Apply(%q) decided on boot b2 wrote on boot b3", w)
		}
	}
}

// TestRegateOnce: a re-gate met again on a fresh copy of the node (a conflict's retry) writes
// nothing when the node shows the re-gate already, or a release on the new boot since: the
// re-gate's time is the first one's, which the maximum hold counts from.
func TestRegateOnce(t *testing.T) {
	r := rebootRule(t, nil)
	n := node(releasedOn("b1", 0), onBoot("b2"))
	d := Decide(r, Readiness{}, Input{Node: n, Pods: []*corev1.Pod{gen(0, true)}, Now: t0.Add(time.Hour)})
	if d.Write != WriteRegate {
		t.Fatalf("Decide() = %q (%s), want a re-gate", d.Write, d.Reason)
	}
	if !r.Apply(d, n, t0.Add(time.Hour)) {
		t.Fatal("Apply() did not re-gate the node it was decided on")
	}
	at := n.Annotations[cniRegated]
	if r.Apply(d, n, t0.Add(2*time.Hour)) || n.Annotations[cniRegated] != at {
		t.Errorf("re-gated twice: %s, then %s", at, n.Annotations[cniRegated])
	}
	released := node(releasedOn("b2", 1), onBoot("b2"))
	if r.Apply(d, released, t0.Add(2*time.Hour)) || r.HasTaint(released) {
		t.Errorf("re-gated a node released on boot b2 since the decision: taints %v", released.Spec.Taints)
	}
}

// TestRegatedMaxHold: maxHold counts from the re-gate, on the gate's clock, not from the
// node's creation; then the timeout policy applies.
func TestRegatedMaxHold(t *testing.T) {
	regateAt := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		rule func(*Rule)
		now  time.Time
		want Decision
	}{
		{name: "within it: wait for its end", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			now: regateAt.Add(5 * time.Minute), want: Decision{RequeueAfter: 5 * time.Minute}},
		{name: "passed, keep", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 5 * time.Minute}; r.TimeoutPolicy = TimeoutKeep },
			now: regateAt.Add(5 * time.Minute), want: Decision{TimedOut: true}},
		{name: "passed, release", rule: func(r *Rule) { r.MaxHold = metav1.Duration{Duration: 5 * time.Minute} },
			now: regateAt.Add(5 * time.Minute), want: Decision{Release: true, TimedOut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(rebootRule(t, tc.rule), Readiness{}, Input{Node: node(regatedFor("b2"), onBoot("b2")), Pods: []*corev1.Pod{gen(0, true)}, Now: tc.now})
			checkDecision(t, d, tc.want, "waiting for boot b2")
		})
	}
}

// TestRebootWrites: Release (the forced release of `gate release`) records the boot and
// ends a re-gate; a rule that ignores reboots records none.
func TestRebootWrites(t *testing.T) {
	r := rebootRule(t, nil)
	n := node(regatedFor("b2"), onBoot("b2"))
	r.Release(n, t0.Add(2*time.Hour))
	b := r.BootOf(n)
	if r.Regated(n) || r.HasTaint(n) || b.Recorded != "b2" || !b.RegatedAt.IsZero() || n.Annotations[cniPlaced] != "" {
		t.Errorf("after the release: taints %v, annotations %v; want boot b2 recorded, the re-gate and its mark gone", n.Spec.Taints, n.Annotations)
	}
	plain := compile(t, Rule{Name: "init", Taint: cniTaint, Components: []Component{{Selector: "app=cni"}}})
	m := node(tainted, onBoot("b1"))
	plain.Release(m, t0)
	if _, ok := m.Annotations[plain.BootAnnotation()]; ok {
		t.Errorf("a rule that ignores reboots recorded the boot: %v", m.Annotations)
	}
}

// TestAnnotationKeysValidated: a rule name that makes one of the keys the rule writes too
// long fails validation, naming the key.
func TestAnnotationKeysValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{strings.Repeat("a", 41), true}, {strings.Repeat("a", 42), false}} {
		r := Rule{Name: tc.name, Taint: cniTaint, Components: []Component{{Selector: "app=cni"}},
			CompletedAnnotation: "startup.k8s.io/completedAt." + tc.name}
		var errs Errors
		r.Compile("", &errs)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("a %d-character name: errors %v, want ok %v", len(tc.name), errs, tc.ok)
		}
		if !tc.ok && !strings.Contains(errs[0].Error(), `makes the annotation key "startup.k8s.io/completedAt.`+tc.name+"_") {
			t.Errorf("error %q does not name the key", errs[0])
		}
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

package rule

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replaceRule is a startup rule on the CNI component that replaces a node not ready 10m
// after its creation, with the default budget and guard unless mod changes them.
func replaceRule(t *testing.T, mod func(*Rule)) *Rule {
	t.Helper()
	r := Rule{Name: "cni", Taint: cniTaint, TimeoutPolicy: TimeoutReplace, MaxHold: metav1.Duration{Duration: 10 * time.Minute},
		Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}}
	if mod != nil {
		mod(&r)
	}
	return compile(t, r)
}

const cniReplaced = cniDone + "_replaced"

// TestDecideReplace is the budget and the guard as a table: the view a timed-out node's
// replacement reads, and what it gets.
func TestDecideReplace(t *testing.T) {
	r := replaceRule(t, func(r *Rule) { r.MaxReplacing = 2 })
	now := t0.Add(time.Hour)
	held := Decision{State: StateHeld, TimedOut: true, Replace: true}
	view := func(mod func(*ReplaceView)) ReplaceView {
		v := ReplaceView{Claim: "default-abc", Pool: "default"}
		if mod != nil {
			mod(&v)
		}
		return v
	}
	tests := []struct {
		name  string
		d     Decision
		view  ReplaceView
		want  ReplaceAction
		guard Guard         // recorded, for ReplaceNow
		after time.Duration // when to decide again
	}{
		{name: "the first timeout of a pool: replaced", d: held, view: view(nil), want: ReplaceNow, guard: Guard{1, now}},
		{name: "no NodeClaim owns the node: kept", d: held, view: view(func(v *ReplaceView) { v.Claim = "" }), want: ReplaceKeep},
		{name: "no NodePool label: kept", d: held, view: view(func(v *ReplaceView) { v.Pool = "" }), want: ReplaceKeep},
		{name: "a guard that cannot be read (malformed, its NodePool gone): kept, looked at again after the backoff",
			d: held, view: view(func(v *ReplaceView) { v.GuardErr = errors.New("x") }), want: ReplaceKeep, after: time.Minute},
		{name: "the budget is spent: waits", d: held, view: view(func(v *ReplaceView) { v.InFlight = 2 }), want: ReplaceWait, after: time.Minute},
		{name: "one slot left: replaced", d: held, view: view(func(v *ReplaceView) { v.InFlight = 1 }), want: ReplaceNow, guard: Guard{1, now}},
		{name: "the second in a row, within the backoff: waits its end",
			d: held, view: view(func(v *ReplaceView) { v.Guard = Guard{1, now.Add(-20 * time.Second)} }), want: ReplaceWait, after: 40 * time.Second},
		{name: "the second in a row, past the backoff: replaced",
			d: held, view: view(func(v *ReplaceView) { v.Guard = Guard{1, now.Add(-time.Minute)} }), want: ReplaceNow, guard: Guard{2, now}},
		{name: "the third in a row: the backoff doubled",
			d: held, view: view(func(v *ReplaceView) { v.Guard = Guard{2, now.Add(-time.Minute)} }), want: ReplaceWait, after: time.Minute},
		{name: "the backoff stops doubling at 16 times",
			d: held, view: view(func(v *ReplaceView) { v.Guard = Guard{9, now} }), want: ReplaceStopped, after: time.Minute},
		{name: "the guard's count reached: stopped",
			d: held, view: view(func(v *ReplaceView) { v.Guard = Guard{3, now.Add(-time.Hour)} }), want: ReplaceStopped, after: time.Minute},
		{name: "stopped, then a node of the pool warmed: replaced, counting from one",
			d: held, view: view(func(v *ReplaceView) { v.Guard, v.WarmedSince = Guard{3, now.Add(-time.Hour)}, true }), want: ReplaceNow, guard: Guard{1, now}},
		{name: "stopped and the budget spent: stopped first",
			d: held, view: view(func(v *ReplaceView) { v.Guard, v.InFlight = Guard{3, now}, 2 }), want: ReplaceStopped, after: time.Minute},
		{name: "replacing already: deleted again whatever the budget and guard",
			d:    Decision{State: StateReplacing, TimedOut: true, Replace: true},
			view: view(func(v *ReplaceView) { v.Guard, v.InFlight = Guard{3, now}, 5 }), want: ReplaceDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.DecideReplace(tc.d, tc.view, now)
			if got.Action != tc.want || got.Reason == "" {
				t.Fatalf("DecideReplace = %+v, want %s with a reason", got, tc.want)
			}
			if tc.want == ReplaceNow && (got.Guard.Timeouts != tc.guard.Timeouts || !got.Guard.Last.Equal(tc.guard.Last)) {
				t.Errorf("guard to record %+v, want %+v", got.Guard, tc.guard)
			}
			if got.After != tc.after {
				t.Errorf("after %s, want %s", got.After, tc.after)
			}
		})
	}
	// The backoff's cap: the fifth and later in a row wait 16 times replaceBackoff.
	r16 := replaceRule(t, func(r *Rule) { r.ReplaceStopAfter = 10 })
	got := r16.DecideReplace(held, view(func(v *ReplaceView) { v.Guard = Guard{9, now} }), now)
	if got.Action != ReplaceWait || got.After != 16*time.Minute {
		t.Errorf("the tenth in a row: %+v, want a wait of 16m", got)
	}
}

// TestReplaceTransitions: the states of a node under a replace rule, as TestTransitions
// has them: the decision in the state, the write the controller makes (Apply), the state
// after it.
func TestReplaceTransitions(t *testing.T) {
	placed := annotated(cniPlaced, PlacedValue(cniTaint, ""))
	replacing := annotated(cniReplaced, "1")
	late := t0.Add(11 * time.Minute)
	tests := []struct {
		name    string
		rule    *Rule
		node    *corev1.Node
		pods    []*corev1.Pod
		now     time.Time
		state   State
		replace bool
		write   Write // the write the controller makes (WriteReplace for a replacement)
		after   State
	}{
		{name: "held past maxHold: replaced, held until Karpenter removes it", rule: replaceRule(t, nil),
			node: node(tainted, placed), pods: []*corev1.Pod{pod(false)}, now: late,
			state: StateHeld, replace: true, write: WriteReplace, after: StateReplacing},
		{name: "held within maxHold: held", rule: replaceRule(t, nil),
			node: node(tainted, placed), pods: []*corev1.Pod{pod(false)}, now: t0.Add(time.Minute),
			state: StateHeld, after: StateHeld},
		{name: "ready at last, past maxHold: released, not replaced", rule: replaceRule(t, nil),
			node: node(tainted, placed), pods: []*corev1.Pod{pod(true)}, now: late,
			state: StateHeld, write: WriteRelease, after: StateReleased},
		{name: "replacing, ready at last: still replacing (its NodeClaim is deleted)", rule: replaceRule(t, nil),
			node: node(tainted, placed, replacing), pods: []*corev1.Pod{pod(true)}, now: late,
			state: StateReplacing, replace: true, after: StateReplacing},
		{name: "replacing, the rule switched to keep: still replacing", rule: compile(t, Rule{Name: "cni", Taint: cniTaint, TimeoutPolicy: TimeoutKeep,
			Components: []Component{{Name: "cni", Selector: "app=cni"}}}),
			node: node(tainted, placed, replacing), now: late,
			state: StateReplacing, replace: true, after: StateReplacing},
		{name: "replacing, the taint removed by hand: the rule records nothing more", rule: replaceRule(t, nil),
			node: node(placed, replacing), now: late,
			state: StateUntainted, after: StateUntainted},
		{name: "re-gated past maxHold: replaced", rule: replaceRule(t, func(r *Rule) { r.OnReboot = RebootGate }),
			node: node(regatedFor("b2"), onBoot("b2")), pods: []*corev1.Pod{gen(0, true)}, now: t0.Add(time.Hour + 11*time.Minute),
			state: StateRegated, replace: true, write: WriteReplace, after: StateReplacing},
		{name: "a keep rule past maxHold: held, not replaced", rule: compile(t, Rule{Name: "cni", Taint: cniTaint, TimeoutPolicy: TimeoutKeep,
			MaxHold: metav1.Duration{Duration: 10 * time.Minute}, Components: []Component{{Name: "cni", Selector: "app=cni"}}}),
			node: node(tainted, placed), pods: []*corev1.Pod{pod(false)}, now: late,
			state: StateHeld, after: StateHeld},
	}
	rd := Readiness{Annotation: "startup.k8s.io/ready"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.rule, rd, Input{Node: tc.node, Pods: tc.pods, Now: tc.now})
			if d.State != tc.state || d.Replace != tc.replace {
				t.Fatalf("Decide = %+v, want state %s, replace %v", d, tc.state, tc.replace)
			}
			if !d.State.Holds() && d.Replace {
				t.Errorf("a replacement of a node the rule does not hold")
			}
			if tc.replace && tc.write == WriteNone && d.Write != WriteNone {
				t.Errorf("write %s, want none", d.Write)
			}
			n := tc.node.DeepCopy()
			if tc.write != WriteNone {
				d.Write = tc.write
				if !tc.rule.Apply(d, n, tc.now) {
					t.Fatalf("Apply(%s) wrote nothing", tc.write)
				}
			}
			if after, _ := StateOf(tc.rule, rd, Input{Node: n, Pods: tc.pods, Now: tc.now}); after != tc.after {
				t.Errorf("after the write: %s, want %s", after, tc.after)
			}
			if after := tc.after; after == StateReleased && tc.rule.Replacing(n) {
				t.Errorf("released with the replacing mark on: %v", n.Annotations)
			}
			if m := (Move{Write: tc.write, Next: tc.after}); !Allows(tc.state, m) {
				t.Errorf("Table has no move %q to %q out of %q", m.Write, m.Next, tc.state)
			}
		})
	}
}

// TestMarkReplacedRechecks: on a fresh copy after a conflict, a node released meanwhile is
// not marked; the mark keeps its first time.
func TestMarkReplacedRechecks(t *testing.T) {
	r := replaceRule(t, nil)
	d := Decision{State: StateHeld, Write: WriteReplace}
	released := node(completed)
	if r.Apply(d, released, t0) || r.Replacing(released) {
		t.Errorf("a released node was marked: %v", released.Annotations)
	}
	n := node(tainted, annotated(cniReplaced, "7"))
	if !r.Apply(d, n, t0) || n.Annotations[cniReplaced] != "7" {
		t.Errorf("marked again: %v", n.Annotations)
	}
	r.Release(n, t0)
	if r.Replacing(n) {
		t.Errorf("`gate release` left the replacing mark: %v", n.Annotations)
	}
}

func TestReplaceValidation(t *testing.T) {
	base := Rule{Name: "cni", Taint: cniTaint, CompletedAnnotation: cniDone, Components: []Component{{Selector: "app=cni"}}}
	tests := []struct {
		name string
		mod  func(*Rule)
		want string // "" is valid
	}{
		{name: "replace with maxHold", mod: func(r *Rule) { r.TimeoutPolicy, r.MaxHold.Duration = TimeoutReplace, time.Minute }},
		{name: "replace without maxHold", mod: func(r *Rule) { r.TimeoutPolicy = TimeoutReplace }, want: "needs maxHold"},
		{name: "a continuous rule", mod: func(r *Rule) { r.TimeoutPolicy, r.MaxHold.Duration, r.Mode = TimeoutReplace, time.Minute, Continuous },
			want: "only a startup rule replaces"},
		{name: "a budget without replace", mod: func(r *Rule) { r.MaxReplacing = 2 }, want: "need timeoutPolicy \"replace\""},
		{name: "a negative budget", mod: func(r *Rule) { r.TimeoutPolicy, r.MaxHold.Duration, r.MaxReplacing = TimeoutReplace, time.Minute, -1 },
			want: "maxReplacing: -1"},
		{name: "a negative guard", mod: func(r *Rule) {
			r.TimeoutPolicy, r.MaxHold.Duration, r.ReplaceStopAfter = TimeoutReplace, time.Minute, -1
		},
			want: "replaceStopAfter: -1"},
		{name: "an unknown policy", mod: func(r *Rule) { r.TimeoutPolicy = "recycle" }, want: `"release", "keep" or "replace"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.mod(&r)
			var errs Errors
			r.Compile("", &errs)
			got := errors.Join(errs...)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("errors %v, want none", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want one with %q", got, tc.want)
			}
		})
	}
	r := base
	r.TimeoutPolicy, r.MaxHold.Duration = TimeoutReplace, time.Minute
	var errs Errors
	r.Compile("", &errs)
	if r.MaxReplacing != DefaultMaxReplacing || r.ReplaceStopAfter != DefaultReplaceStopAfter || r.ReplaceBackoff.Duration != DefaultReplaceBackoff {
		t.Errorf("defaults: %d in flight, stop after %d, backoff %s", r.MaxReplacing, r.ReplaceStopAfter, r.ReplaceBackoff.Duration)
	}
}

func TestParseGuard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Guard
		err  bool
	}{
		{in: "", want: Guard{}},
		{in: "2@1700000000", want: Guard{2, time.Unix(1700000000, 0)}},
		{in: "2", err: true},
		{in: "x@1", err: true},
		{in: "-1@1", err: true},
		{in: "1@x", err: true},
	} {
		got, err := ParseGuard(tc.in)
		if (err != nil) != tc.err || got.Timeouts != tc.want.Timeouts || !got.Last.Equal(tc.want.Last) {
			t.Errorf("ParseGuard(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if !tc.err && tc.in != "" && got.String() != tc.in {
			t.Errorf("%q read back as %q", tc.in, got.String())
		}
	}
}

// TestNodeClaimOf: the NodeClaim is the node's Karpenter owner, by name and UID.
func TestNodeClaimOf(t *testing.T) {
	n := node(func(n *corev1.Node) {
		n.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Something", Name: "x", UID: "u0"},
			{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "default-abc", UID: "u1"},
		}
	})
	if name, uid, ok := NodeClaimOf(n); !ok || name != "default-abc" || uid != "u1" {
		t.Errorf("NodeClaimOf = %q, %q, %v", name, uid, ok)
	}
	if _, _, ok := NodeClaimOf(node()); ok {
		t.Errorf("a node with no owner has a NodeClaim")
	}
}

// TestWarmedOnlyOnRequirements (issue 72, defect 6): the storm guard of timeoutPolicy
// replace stops after timeouts in a row until a node of the pool warms. A node released by
// hand (`gate release`), a backfill undone or an adoption did not warm: on 424467d each
// counted as warmed, so releasing a stuck node by hand restarted a stopped storm. A
// release on the requirements counts.
func TestWarmedOnlyOnRequirements(t *testing.T) {
	r := compile(t, Rule{Name: "cni", Taint: cniTaint, Components: []Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}})
	last, now := t0, t0.Add(time.Hour)
	byHand := node(tainted)
	r.Release(byHand, now)
	adopted := node(annotated("startup.k8s.io/completedAt", "1"))
	r.ReleasedAnnotation = "startup.k8s.io/completedAt"
	if !r.Apply(Decide(r, Readiness{}, Input{Node: adopted, Now: now}), adopted, now) || !r.Completed(adopted) {
		t.Fatalf("adoption not written: %v", adopted.Annotations)
	}
	warmed := node(tainted)
	pods := []*corev1.Pod{gen(0, true)}
	d := Decide(r, Readiness{}, Input{Node: warmed, Pods: pods, Now: now})
	if !d.Release || !r.Apply(d, warmed, now) {
		t.Fatalf("release on readiness: %+v", d)
	}
	for name, c := range map[string]struct {
		n    *corev1.Node
		want bool
	}{"released by hand": {byHand, false}, "adopted": {adopted, false}, "released on its requirements": {warmed, true}} {
		if got := r.completedAfter(c.n, last); got != c.want {
			t.Errorf("%s: counted as warmed %v, want %v (annotations %v)", name, got, c.want, c.n.Annotations)
		}
	}
}

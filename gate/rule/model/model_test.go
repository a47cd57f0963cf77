package model

import (
	"flag"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// maxStates bounds TestFixpoint's walk: 0 (make explore) walks to the fixpoint.
var maxStates = flag.Int("max-states", 20000, "stop TestFixpoint after this many states (0: walk to the fixpoint)")

// TestFixpoint walks the state machine: every violation is on a documented limit, and some
// path reaches one.
func TestFixpoint(t *testing.T) {
	// A defect ends the walk: a walk of hours must not hide it until its end.
	res, err := Explore(Options{MaxStates: *maxStates, StopOnDefect: true, Layer: func(depth, states int) { t.Logf("depth %d: %d states", depth, states) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d states (fixpoint: %v), %d transitions, %d judged, depth %d; %d violations, all on the documented limits",
		res.States, res.Fixpoint, res.Transitions, res.Judged, res.Depth, res.Limits)
	for _, d := range res.Defects[:min(len(res.Defects), 5)] {
		t.Error(d)
	}
	if res.Limits == 0 {
		t.Error("no path reached a documented limit: the walk does not reach as far as it claims")
	}
	if *maxStates == 0 && !res.Fixpoint {
		t.Error("no fixpoint")
	}
}

// TestCatchesDefects: the model's negative controls, each a gate with a known defect that
// the walk must catch.
func TestCatchesDefects(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		opts       Options
	}{
		// Reboot (re-gated), suspend, re-key, the orphan pass: the suspended rule's hold lifted.
		{name: "a suspended rule's old key lifted as an orphan", want: "released-while-suspended", opts: Options{LiftSuspended: true}},
		// Re-key, reboot: the new taint's record never recorded the release, and misses the reboot.
		{name: "a re-keyed rule that does not adopt the node", want: "early", opts: Options{Defect: func(d rule.Decision, _ *corev1.Pod) rule.Decision {
			if d.State == rule.StateAdopting {
				return rule.Decision{State: d.State, Reason: "left alone"}
			}
			return d
		}}},
		{name: "re-gated node released on any Ready Pod", want: "early", opts: Options{Defect: func(d rule.Decision, pod *corev1.Pod) rule.Decision {
			if d.State == rule.StateRegated && d.Write == rule.WriteNone && podReady(pod) {
				d.Release, d.Write = true, rule.WriteRelease
			}
			return d
		}}},
		// The gate before the evidence: a re-gated node released only on a Ready transition
		// after the re-gate's second, which this model's kubelet, whose clock reads the
		// re-gate's second, never shows.
		{name: "re-gate released on the gate's clock", want: "stranded", opts: Options{Defect: func(d rule.Decision, _ *corev1.Pod) rule.Decision {
			if d.State == rule.StateRegated && d.Release {
				return rule.Decision{State: d.State, Reason: "no Ready transition after the re-gate"}
			}
			return d
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.MaxStates, tc.opts.StopOnDefect = *maxStates, true
			res, err := Explore(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(res.Defects, func(d string) bool { return strings.HasPrefix(d, tc.want+" ") }) {
				t.Errorf("%d states, %d defects %v; want one %s", res.States, len(res.Defects), res.Defects[:min(len(res.Defects), 3)], tc.want)
			}
		})
	}
}

// TestKeyIgnoresPath: two worlds that differ only in how they were reached are one state,
// and a world that differs in any field is another.
func TestKeyIgnoresPath(t *testing.T) {
	a := &world{node: startNode(), ready: true}
	b := a.clone()
	b.path = &step{event: "reboot/none"}
	if a.key() != b.key() {
		t.Fatal("the path changed the key")
	}
	d, err := decode(a.key())
	if err != nil {
		t.Fatal(err)
	}
	if d.key() != a.key() {
		t.Fatalf("decode(key) has key\n%s, want\n%s", d.key(), a.key())
	}
	for name, change := range map[string]func(w *world){
		"boot":       func(w *world) { w.boot++ },
		"seen":       func(w *world) { w.seenAny = true },
		"limit":      func(w *world) { w.early[1] = true },
		"annotation": func(w *world) { w.node.Annotations[done] = "1" },
		"taints":     func(w *world) { w.node.Spec.Taints = nil },
	} {
		c := a.clone()
		change(c)
		if c.key() == a.key() {
			t.Errorf("%s: same key", name)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// TestRekeyedBackAfterARestart is a path the first walk to a fixpoint found, six events deep
// (past the old depth-first walk's five): a restart recorded by the rule's first taint's
// record while the rule had the second, then a reboot. The rule given its second taint again
// read only that record, counted the restart's readiness as the new boot's, and released
// the node early: the early limit, for the second record. The gate now does better than the
// limit: it counts what the other record holds of the same boot, and holds the node.
func TestRekeyedBackAfterARestart(t *testing.T) {
	e, err := newExplorer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{node: startNode(), ready: true, shownReady: true}
	e.decide(w, true)
	for _, s := range [][2]string{{"crash-restart", "fresh"}, {"rekey", "fresh"}, {"rekey", "fresh"}, {"warm-up", "fresh"}, {"reboot", "none"}, {"rekey", "fresh"}} {
		events[s[0]](w)
		w.path = &step{event: s[0] + "/" + s[1], prev: w.path}
		var res Result
		e.react(w, s[1], &res)
		if len(res.Defects) > 0 {
			t.Fatal(res.Defects[0])
		}
	}
	if !e.tainted(w) {
		t.Fatalf("rebooted, not warm again, and not held: %v", w.node.Annotations)
	}
}

// TestStrandOfTheOtherRecord is a path the walk to a fixpoint found, seven events deep: the
// rule, re-keyed, re-gates the node for a reboot; a second reboot and its warm-up pass
// before it decides (the stranded limit, for that record); given its first taint again, the
// rule counts what the other record holds of the same boot as past, as it must (the Ready
// Pod may be either boot's), and holds the node. That is the same limit, met through the
// other record: the model carries it over, as concepts.md says.
func TestStrandOfTheOtherRecord(t *testing.T) {
	e, err := newExplorer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{node: startNode(), ready: true, shownReady: true}
	e.decide(w, true)
	var res Result
	for _, s := range [][2]string{{"reboot", "none"}, {"rekey", "fresh"}, {"reboot", "none"},
		{"kubelet-restarts-containers", "none"}, {"warm-up", "fresh"}, {"rekey", "none"}, {"orphan-lift", "fresh"}} {
		if s[0] == "orphan-lift" {
			e.orphanLift(w)
		} else {
			events[s[0]](w)
		}
		w.path = &step{event: s[0] + "/" + s[1], prev: w.path}
		e.react(w, s[1], &res)
	}
	if v := e.judge(w); v != "stranded" || !w.stranded[0] {
		t.Fatalf("judged %q, limit %v; want stranded, on the limit: %v", v, w.stranded, w.node.Annotations)
	}
	if len(res.Defects) > 0 {
		t.Fatal(res.Defects[0])
	}
}

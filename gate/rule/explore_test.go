package rule

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The state machine of one node under a startup rule that gates reboots, explored: every
// sequence of events up to a depth, from a node just released, and after each event the
// gate deciding on a fresh view of the init Pod, on the stale view it last had, or not at
// all (down, or the events coalesced into one reconcile). It decides as the controller
// does (Decide, then Apply its write, until none is left). Whenever the gate has just
// decided on a fresh view, two invariants are judged on the ground truth the model keeps,
// not on the gate's code:
//
//   - early: the rule runs and gates reboots, the warm-up has not run on the boot the node
//     runs, and nothing stands between a Pod and the node: no taint, and the Pod guard
//     (which denies in state rebooted) would let it through;
//   - stranded: the warm-up has run on the boot the node runs, the init Pod is Ready, the
//     rule runs, and its taint is still on;
//   - released-while-suspended: the rule was suspended holding the node, is still
//     suspended (renamed or re-keyed since, or not), and the node carries no taint.
//
// Every violation must fall on one of the two limits concepts.md states.

// world is the model: the Node as the API holds it, the init Pod's containers, the rule's
// config, and what the gate last saw.
type world struct {
	node *corev1.Node
	// boot counts the node's boots; start counts container starts; startBoot is the boot
	// the current containers started on; ready says they are Ready.
	boot, start, startBoot int
	ready                  bool
	// warmedBoot is the boot on which the warm-up last completed (-1: none yet); a
	// container that crashes after it does not undo it (a startup rule never re-taints).
	warmedBoot int
	// shown is the start the Pod's status shows, and whether Ready: after a reboot the
	// kubelet reports the new boot first and the new containers after.
	shown      int
	shownReady bool
	suspend    bool
	ignore     bool // onReboot: ignore
	rekeyed    bool // the rule's taint key is cniTaint's, or (rekeyed) another
	renamed    bool // the rule is named cni, or (renamed) cni-renamed
	// heldSuspended: the node was held when the rule was suspended; suspending never
	// releases.
	heldSuspended bool
	// seen is the Pod as the gate last saw it.
	seen *corev1.Pod
	path []string
	// restartUnseen: on a released node, containers Ready since the gate last recorded
	// readiness; rebootedUnseen: a re-gated node rebooted since the rule that re-gated it
	// last decided. limit names the limit the
	// path has reached, if any.
	restartUnseen, rebootedUnseen bool
	limit                         string
}

const (
	limitEarly    = "after the release, containers Ready that the rule did not record (it did not decide, or was suspended or ignoring reboots: a restart on the released boot, or the warm-up of a boot since), then a reboot seen before the kubelet reported the new boot's containers"
	limitStranded = "re-gated, a second reboot and its warm-up, before the rule decided again (down, or suspended)"
)

func (w *world) clone() *world {
	c := *w
	c.node = w.node.DeepCopy()
	c.path = slices.Clone(w.path)
	return &c
}

func (w *world) pod() *corev1.Pod { return gen(int32(w.shown), w.shownReady) }

func (w *world) warm() bool { return w.warmedBoot == w.boot }

// ownTaint reports whether the node carries a taint of the rule as it is now: of its key, or
// placed under its name.
func (w *world) ownTaint() bool {
	t := cniTaint
	if w.rekeyed {
		t = rekeyedTaint
	}
	_, placed := w.node.Annotations[DefaultPlacedAnnotation+"."+RecordName(t)]
	return placed && len(w.node.Spec.Taints) > 0 || slices.ContainsFunc(w.node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key })
}

// events change the world; each reports whether it applies.
var events = map[string]func(w *world) bool{
	"reboot": func(w *world) bool {
		if w.boot == 2 {
			return false
		}
		w.boot++
		w.node.Status.NodeInfo.BootID = fmt.Sprintf("b%d", w.boot)
		w.rebootedUnseen = w.rebootedUnseen || w.node.Annotations[exDone+regatedSuffix] != "" || w.node.Annotations[rekeyedDone+regatedSuffix] != ""
		if w.restartUnseen {
			w.limit = limitEarly
		}
		return true
	},
	"kubelet-restarts-containers": func(w *world) bool {
		if w.startBoot == w.boot {
			return false
		}
		w.start, w.startBoot, w.ready = w.start+1, w.boot, false
		w.shown, w.shownReady = w.start, false
		return true
	},
	"warm-up": func(w *world) bool {
		if w.startBoot != w.boot || w.ready {
			return false
		}
		w.ready, w.shownReady, w.warmedBoot = true, true, w.boot
		w.restartUnseen = w.restartUnseen || w.node.Annotations[exDone] != "" || w.node.Annotations[rekeyedDone] != ""
		return true
	},
	"crash-restart": func(w *world) bool {
		if w.startBoot != w.boot || !w.ready || w.start > 4 {
			return false
		}
		w.start++
		w.shown, w.ready, w.shownReady = w.start, false, false
		return true
	},
	"suspend": func(w *world) bool {
		w.suspend = !w.suspend
		w.heldSuspended = w.suspend && w.ownTaint()
		return true
	},
	"onReboot": func(w *world) bool { w.ignore = !w.ignore; return true },
	// A rename keeps the record; a re-key leaves the old taint an orphan, which the gate
	// does not lift while the rule is suspended (config.Frozen): the hold stays either way.
	"rekey":  func(w *world) bool { w.rekeyed = !w.rekeyed; return true },
	"rename": func(w *world) bool { w.renamed = !w.renamed; return true },
}

// rekeyedTaint is the rule's taint once re-keyed; exDone and rekeyedDone are the completion
// annotations of the two taints' records, as the config names them (RecordName): a rename
// keeps the record.
var (
	rekeyedTaint = corev1.Taint{Key: "example.com/cni-warming", Effect: corev1.TaintEffectNoSchedule}
	exDone       = "startup.k8s.io/completedAt." + RecordName(cniTaint)
	rekeyedDone  = "startup.k8s.io/completedAt." + RecordName(rekeyedTaint)
)

// orphanLift is the gate's orphan pass once the grace period has passed, an event of its
// own: the gate's own rule.Orphans and rule.LiftOrphan, over the one rule in force, and
// the rule's taint, as admission would add it now.
func (e *explorer) orphanLift(w *world) bool {
	r := e.rule(w)
	if r.Matches(w.node) && (r.Suspend && !e.liftSuspended || !r.Suspend && !r.Recorded(w.node)) {
		return false // config.Frozen
	}
	orphans := Orphans([]*Rule{r}, w.node, DefaultPlacedAnnotation, "")
	for _, o := range orphans {
		LiftOrphan(w.node, o, DefaultPlacedAnnotation, "", "startup.k8s.io/completedAt")
		if !r.Suspend {
			r.AddTaint(w.node) // what admission adds now, as config.LiftOrphan does
		}
	}
	return len(orphans) > 0
}

// explorer holds the rules of each config the model switches between; defect, when set,
// changes each decision: a gate with a known defect, which the exploration must catch.
type explorer struct {
	rules  map[[4]bool]*Rule
	defect func(d Decision, pod *corev1.Pod) Decision
	// liftSuspended: a gate that lifts a suspended rule's old key as an orphan.
	liftSuspended bool
}

func newExplorer(t *testing.T) *explorer {
	t.Helper()
	e := &explorer{rules: map[[4]bool]*Rule{}}
	for _, suspend := range []bool{false, true} {
		for _, ignore := range []bool{false, true} {
			for _, rekeyed := range []bool{false, true} {
				for _, renamed := range []bool{false, true} {
					e.rules[[4]bool{suspend, ignore, rekeyed, renamed}] = rebootRule(t, func(r *Rule) {
						r.Suspend, r.ReleasedAnnotation = suspend, "startup.k8s.io/completedAt"
						r.GateRecords = []string{"startup.k8s.io/completedAt." + RecordName(cniTaint)}
						if rekeyed {
							r.GateRecords = []string{rekeyedDone}
						}
						if ignore {
							r.OnReboot = RebootIgnore
						}
						if rekeyed {
							r.Taint = rekeyedTaint
						}
						if renamed {
							r.Name = "cni-renamed"
						}
						r.CompletedAnnotation = "startup.k8s.io/completedAt." + RecordName(r.Taint)
						r.PlacedAnnotation = DefaultPlacedAnnotation + "." + RecordName(r.Taint)
					})
				}
			}
		}
	}
	return e
}

func (e *explorer) rule(w *world) *Rule {
	return e.rules[[4]bool{w.suspend, w.ignore, w.rekeyed, w.renamed}]
}

// tainted reports whether the node carries the rule's taint under either key.
func (e *explorer) tainted(w *world) bool {
	return e.rules[[4]bool{}].HasTaint(w.node) || e.rules[[4]bool{false, false, true}].HasTaint(w.node)
}

// decide runs the gate: decisions and their writes until none is left, on the Pod as it is
// (fresh) or as the gate last saw it.
func (e *explorer) decide(w *world, fresh bool) {
	r := e.rule(w)
	view := w.seen
	if fresh || view == nil {
		view = w.pod()
	}
	for range 5 {
		d := Decide(r, Readiness{}, Input{Node: w.node, Pods: []*corev1.Pod{view}, Now: t0})
		if d.Confirm() {
			// The controller decides such a write again on the Pods read from the apiserver.
			d = Decide(r, Readiness{}, Input{Node: w.node, Pods: []*corev1.Pod{w.pod()}, Now: t0})
		}
		if e.defect != nil {
			d = e.defect(d, view)
		}
		// Rebooted again while re-gated.
		againAt := d.State == StateRebootedAgain
		if againAt && w.rebootedUnseen && w.warm() {
			w.limit = limitStranded
		}
		if d.Write == WriteNone || r.Suspend || r.DryRun {
			break
		}
		r.Apply(d, w.node, t0)
	}
	if fresh {
		// A reboot is seen by the name that re-gated the node: a rule renamed away from
		// its re-gate holds the node as a first hold, and records nothing of the reboot.
		_, regatedHere := w.node.Annotations[r.RegatedAnnotation()]
		w.seen, w.rebootedUnseen = view, w.rebootedUnseen && (r.Suspend || !regatedHere)
		// Only a rule that runs and gates reboots records a restart's readiness.
		w.restartUnseen = w.restartUnseen && !r.GatesReboots() || r.Suspend
	}
}

// judge names the invariant the world breaks, if any.
func (e *explorer) judge(w *world) string {
	r := e.rule(w)
	if r.Suspend && w.heldSuspended && len(w.node.Spec.Taints) == 0 {
		return "released-while-suspended"
	}
	if r.Suspend || !r.GatesReboots() {
		return ""
	}
	st, _ := StateOf(r, Readiness{}, Input{Node: w.node, Pods: []*corev1.Pod{w.pod()}, Now: t0})
	switch {
	case !w.warm() && !e.tainted(w) && st != StateRebooted:
		return "early"
	case w.warm() && w.ready && e.tainted(w) && !orphaned(r, w.node):
		// Re-keyed, the old key's taint holds the node until the orphan pass: its bound.
		return "stranded"
	}
	return ""
}

// orphaned reports whether a taint of the gate's on the node is an orphan the next orphan
// pass lifts: placed under a taint the rule no longer has.
func orphaned(r *Rule, n *corev1.Node) bool {
	return len(Orphans([]*Rule{r}, n, DefaultPlacedAnnotation, "")) > 0
}

// exploration is what one walk found.
type exploration struct {
	paths, judged, limits int
	defects               []string
}

// explore walks every path of up to depth events from a node just released.
func (e *explorer) explore(t *testing.T, depth int) exploration {
	t.Helper()
	start := &world{node: node(tainted, annotated(DefaultPlacedAnnotation+"."+RecordName(cniTaint), PlacedValue(cniTaint, "")), onBoot("b0")), ready: true, shownReady: true}
	e.decide(start, true)
	if r := e.rule(start); r.HasTaint(start.node) {
		t.Fatalf("start: not released: %v", start.node.Annotations)
	}
	evs := maps.Clone(events)
	evs["orphan-lift"] = e.orphanLift
	names := slices.Sorted(maps.Keys(evs))
	var x exploration
	var walk func(w *world, left int)
	walk = func(w *world, left int) {
		x.paths++
		if left == 0 {
			return
		}
		for _, name := range names {
			for _, reaction := range []string{"fresh", "stale", "none"} {
				n := w.clone()
				if !evs[name](n) {
					break
				}
				n.path = append(n.path, name+"/"+reaction)
				switch reaction {
				case "fresh":
					e.decide(n, true)
				case "stale":
					e.decide(n, false)
					e.decide(n, true)
				}
				if reaction != "none" {
					x.judged++
					switch v := e.judge(n); {
					case v == "":
					case v == "early" && n.limit == limitEarly, v == "stranded" && n.limit == limitStranded:
						x.limits++
					default:
						x.defects = append(x.defects, fmt.Sprintf("%s after %s: taints %v, annotations %v", v, strings.Join(n.path, ", "), n.node.Spec.Taints, n.node.Annotations))
					}
				}
				walk(n, left-1)
			}
		}
	}
	walk(start, depth)
	return x
}

// exploreDepth is how many events deep TestExploreRebootStates goes: make test's default
// takes seconds; make explore goes deeper.
var exploreDepth = flag.Int("explore-depth", 5, "events per path in TestExploreRebootStates")

// TestExploreRebootStates explores every path of up to -explore-depth events: every
// violation is on a documented limit.
func TestExploreRebootStates(t *testing.T) {
	depth := *exploreDepth
	x := newExplorer(t).explore(t, depth)
	t.Logf("%d paths to depth %d, %d judged; %d violations, all on the documented limits", x.paths, depth, x.judged, x.limits)
	for _, d := range x.defects[:min(len(x.defects), 5)] {
		t.Error(d)
	}
	if x.limits == 0 {
		t.Error("no path reached a documented limit: the exploration does not reach as far as it claims")
	}
}

// TestExploreCatchesDefects: the exploration's negative controls. A gate that counts the
// old boot's readiness after a re-gate lets Pods in early; one that releases a re-gated
// node only on a Ready transition later than its own clock's re-gate strands it.
func TestExploreCatchesDefects(t *testing.T) {
	for _, tc := range []struct {
		name, want    string
		defect        func(d Decision, pod *corev1.Pod) Decision
		liftSuspended bool
		// depth is how deep the path to the defect goes (4 unless set).
		depth int
	}{
		// Reboot (re-gated), suspend, re-key, the orphan pass: the suspended rule's hold lifted.
		{name: "a suspended rule's old key lifted as an orphan", want: "released-while-suspended", liftSuspended: true},
		// Re-key, reboot: the new taint's record never recorded the release, and misses the reboot.
		{name: "a re-keyed rule that does not adopt the node", want: "early", defect: func(d Decision, _ *corev1.Pod) Decision {
			if d.State == StateAdopting {
				return Decision{State: d.State, Reason: "left alone"}
			}
			return d
		}},
		{name: "re-gated node released on any Ready Pod", want: "early", defect: func(d Decision, pod *corev1.Pod) Decision {
			if d.State == StateRegated && d.Write == WriteNone && hasPodReady(pod) {
				return released(d)
			}
			return d
		}},
		// The gate before the evidence: a re-gated node released only on a Ready transition
		// after the re-gate's second, which this model's kubelet, whose clock reads the
		// re-gate's second, never shows.
		{name: "re-gate released on the gate's clock", want: "stranded", defect: func(d Decision, _ *corev1.Pod) Decision {
			if d.State == StateRegated && d.Release {
				return Decision{State: d.State, Reason: "no Ready transition after the re-gate"}
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExplorer(t)
			e.defect = tc.defect
			e.liftSuspended = tc.liftSuspended
			x := e.explore(t, cmp.Or(tc.depth, 4))
			if !slices.ContainsFunc(x.defects, func(d string) bool { return strings.HasPrefix(d, tc.want+" ") }) {
				t.Errorf("%d paths, %d defects %v; want one %s", x.paths, len(x.defects), x.defects[:min(len(x.defects), 3)], tc.want)
			}
		})
	}
}

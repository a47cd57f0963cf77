package model

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// explorer holds the rule of each config the model switches between (suspended, ignoring
// reboots, re-keyed, renamed) and the gate's defect, if any.
type explorer struct {
	rules map[[4]bool]*rule.Rule
	opts  Options
}

func newExplorer(opts Options) (*explorer, error) {
	e := &explorer{rules: map[[4]bool]*rule.Rule{}, opts: opts}
	for _, suspend := range []bool{false, true} {
		for _, ignore := range []bool{false, true} {
			for _, rekeyed := range []bool{false, true} {
				for _, renamed := range []bool{false, true} {
					r, err := compile(suspend, ignore, rekeyed, renamed)
					if err != nil {
						return nil, err
					}
					e.rules[[4]bool{suspend, ignore, rekeyed, renamed}] = r
				}
			}
		}
	}
	return e, nil
}

// compile is the startup rule gating reboots on the CNI component in one of the configs, its
// records named after its taint as the config names them.
func compile(suspend, ignore, rekeyed, renamed bool) (*rule.Rule, error) {
	r := rule.Rule{Name: "cni", Taint: Taint, OnReboot: rule.RebootGate, Suspend: suspend,
		Components:         []rule.Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}},
		ReleasedAnnotation: "startup.k8s.io/completedAt", GateRecords: []string{done}}
	if ignore {
		r.OnReboot = rule.RebootIgnore
	}
	if rekeyed {
		r.Taint, r.GateRecords = RekeyedTaint, []string{rekeyedDone}
	}
	if renamed {
		r.Name = "cni-renamed"
	}
	r.CompletedAnnotation = "startup.k8s.io/completedAt." + rule.RecordName(r.Taint)
	r.PlacedAnnotation = rule.DefaultPlacedAnnotation + "." + rule.RecordName(r.Taint)
	var errs rule.Errors
	if r.Compile("", &errs); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &r, nil
}

func (e *explorer) rule(w *world) *rule.Rule {
	return e.rules[[4]bool{w.suspend, w.ignore, w.rekeyed, w.renamed}]
}

// tainted reports whether the node carries the rule's taint under either key.
func (e *explorer) tainted(w *world) bool {
	return e.rules[[4]bool{}].HasTaint(w.node) || e.rules[[4]bool{false, false, true}].HasTaint(w.node)
}

// orphanLift is the gate's orphan pass once the grace period has passed, an event of its
// own: the gate's own rule.Orphans and rule.LiftOrphan, over the one rule in force, and
// the rule's taint, as admission would add it now.
func (e *explorer) orphanLift(w *world) bool {
	r := e.rule(w)
	if r.Matches(w.node) && (r.Suspend && !e.opts.LiftSuspended || !r.Suspend && !r.Recorded(w.node)) {
		return false // config.Frozen
	}
	orphans := rule.Orphans([]*rule.Rule{r}, w.node, rule.DefaultPlacedAnnotation, "")
	for _, o := range orphans {
		rule.LiftOrphan(w.node, o, rule.DefaultPlacedAnnotation, "", "startup.k8s.io/completedAt")
		if !r.Suspend {
			r.AddTaint(w.node) // what admission adds now, as config.LiftOrphan does
		}
	}
	return len(orphans) > 0
}

// decide runs the gate: decisions and their writes until none is left, on the Pod as it is
// (fresh) or as the gate last saw it.
func (e *explorer) decide(w *world, fresh bool) {
	r := e.rule(w)
	view := w.pod()
	if !fresh && w.seenAny {
		view = initPod(w.seenShown, w.seenReady)
	}
	cur := w.rec()
	_, had := w.node.Annotations[records[cur]]
	w.sharePast(cur)
	for range 5 {
		d := rule.Decide(r, rule.Readiness{}, rule.Input{Node: w.node, Pods: []*corev1.Pod{view}, Now: t0})
		if d.Confirm() {
			// The controller decides such a write again on the Pods read from the apiserver.
			d = rule.Decide(r, rule.Readiness{}, rule.Input{Node: w.node, Pods: []*corev1.Pod{w.pod()}, Now: t0})
		}
		if e.opts.Defect != nil {
			d = e.opts.Defect(d, view)
		}
		// Rebooted again while re-gated, and warm on the new boot before the gate saw it.
		if d.State == rule.StateRebootedAgain && w.rebootedUnseen[w.rec()] && w.warm() {
			w.stranded[w.rec()] = true
		}
		if d.Write == rule.WriteNone || r.Suspend || r.DryRun {
			break
		}
		r.Apply(d, w.node, t0)
	}
	w.sharePast(cur) // a record made now copies the other's boot and readiness
	if _, has := w.node.Annotations[records[cur]]; has && !had {
		// Adopted: the record takes the other's boot and readiness (rule.adoptRecord), and
		// with them what that one's rule did not see.
		o := 1 - cur
		w.restartUnseen[cur] = w.restartUnseen[cur] || w.restartUnseen[o]
		w.rebootedUnseen[cur] = w.rebootedUnseen[cur] || w.rebootedUnseen[o]
		w.early[cur], w.stranded[cur] = w.early[cur] || w.early[o], w.stranded[cur] || w.stranded[o]
	}
	if fresh {
		// A reboot is seen by the record that re-gated the node.
		_, regatedHere := w.node.Annotations[r.RegatedAnnotation()]
		w.seenAny, w.seenShown, w.seenReady = true, w.shown, w.shownReady
		i := w.rec()
		w.rebootedUnseen[i] = w.rebootedUnseen[i] && (r.Suspend || !regatedHere)
		// Only a rule that runs and gates reboots records a restart's readiness.
		w.restartUnseen[i] = w.restartUnseen[i] && !r.GatesReboots() || r.Suspend
	}
}

// sharePast: the rule counts as past what the other record holds of the same boot
// (rule.pastReadiness), and with it that record's unseen second reboot.
func (w *world) sharePast(cur int) {
	o := 1 - cur
	if boot := w.node.Annotations[records[cur]+"_bootID"]; boot != "" && boot == w.node.Annotations[records[o]+"_bootID"] {
		w.stranded[cur] = w.stranded[cur] || w.stranded[o]
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
	st, _ := rule.StateOf(r, rule.Readiness{}, rule.Input{Node: w.node, Pods: []*corev1.Pod{w.pod()}, Now: t0})
	switch {
	case !w.warm() && !e.tainted(w) && st != rule.StateRebooted:
		return "early"
	case w.warm() && w.ready && e.tainted(w) && len(rule.Orphans([]*rule.Rule{r}, w.node, rule.DefaultPlacedAnnotation, "")) == 0:
		// Re-keyed, the old key's taint holds the node until the orphan pass: its bound.
		return "stranded"
	}
	return ""
}

package rule

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Readiness is how every rule reads an init Pod.
type Readiness struct {
	// Annotation on an init Pod, with value "true", marks it ready early.
	Annotation string
	// AnnotationOnly counts only the annotation, not Pod readiness.
	AnnotationOnly bool
}

// Input is what a decision reads about one node.
type Input struct {
	Node *corev1.Node
	// Pods may hold any Pods; only those of a component of the rule, on this node, not
	// terminating and created at or after the node count.
	Pods []*corev1.Pod
	// Expected names the rule's components whose DaemonSet targets the node although none
	// of their Pods is there yet.
	Expected map[string]bool
	// Blocked says, for an expected component, why its DaemonSet cannot place a Pod there
	// (Rule.Untolerated): the hold then names the taint in its reason.
	Blocked map[string]string
	Now     time.Time
	// UnmetSince (continuous rules, after the first release) is when the caller first saw
	// the requirements fail, or zero.
	UnmetSince time.Time
	// Stale, when not nil, is readiness that does not count: the fingerprints of Pods whose
	// readiness a rule that gates reboots recorded with an earlier boot (evidence.go). A
	// Pod counts then only when Ready by its condition (the early-ready annotation survives
	// a reboot) on containers whose fingerprint is not in it.
	Stale map[string]bool
}

// Decision is the outcome of Decide for one node and one rule.
type Decision struct {
	// Release: remove the rule's taint now (the first time, also record completion).
	Release bool
	// Taint (continuous rules): put the taint back now; the requirements have failed for
	// the settle time.
	Taint bool
	// Write is the Node write the decision asks for (Apply makes it); Release and Taint
	// ask for WriteRelease and WriteTaint.
	Write Write
	// State is the node's state under the rule that the decision was made in (StateOf).
	State State
	// Boot is the boot ID the node reported when the decision was made: a write for a rule
	// that gates reboots is made only while the node still reports it.
	Boot string
	// Prints are the fingerprints of the rule's init Pods ready when the decision was made:
	// the evidence a write records.
	Prints []string
	// TimedOut: MaxHold passed before the node was ready. With TimeoutRelease, Release is
	// also true; with TimeoutKeep the taint stays; with TimeoutReplace, Replace is true.
	TimedOut bool
	// Replace: the node is to be replaced (its NodeClaim deleted), as DecideReplace decides
	// under the rule's budget and guard; the node stays held meanwhile.
	Replace bool
	// Met reports whether the requirements hold now.
	Met bool
	// Reason says why, in words fit for an event, a log line or `gate status`.
	Reason string
	// RequeueAfter > 0: nothing will change before this much time passes (min or max hold,
	// settle time), so decide again then. Zero: wait for the next watch event.
	RequeueAfter time.Duration
	// ReadyAt is when the node became ready (the latest Ready transition of the Pods that
	// made it so), for the ready-to-release latency metric. Zero if not known.
	ReadyAt time.Time
}

// Confirm reports whether the decision's write rests on the init Pods being as the
// apiserver has them, so that one decided from a cache that lags must be decided again on
// a fresh read before it is written: a re-taint (the requirements may hold again), a
// reboot whose warm-up counts as already done (the readiness seen may be the old boot's),
// the readiness recorded as stale when the node booted again (too little recorded lets the
// old boot's readiness count for the new one), and a replacement's first step (an init Pod
// Ready a moment before maxHold, behind a lagging cache, would cost a warm node).
func (d Decision) Confirm() bool {
	return d.Taint || d.Write == WriteStale || d.State == StateRebootedReady || d.State == StateRebootedAgain || d.State == StateHeldRebooted ||
		d.Replace && d.State != StateReplacing
}

// Wait reports whether the node keeps (or gets) the taint.
func (d Decision) Wait() bool { return !d.Release }

// Decide says what rule r does about a node: it names the node's state (StateOf) and decides
// in it. It is pure: the answer depends only on its arguments.
//
// Before the rule first releases the node: release once the requirements hold and the
// minimum hold has passed; at the maximum hold, apply the timeout policy. After it: a
// startup rule does nothing, unless it gates reboots (the reboot states) or the autoscaler
// put its taint back when it registered the node (StateReturned); a continuous rule takes
// its taint off while the requirements hold and puts it back once they have failed for the
// settle time.
//
// The Pod creation rule matters: when an autoscaler reuses a node name, a Ready init Pod of
// the previous node can still be bound to that name until pod GC runs, and it must never
// release the new node.
func Decide(r *Rule, rd Readiness, in Input) Decision {
	st, why, ev := r.classify(rd, in)
	d := r.decideIn(st, why, ev, rd, in)
	d.State, d.Boot, d.Prints = st, ev.boot.Current, ev.prints
	return d
}

// decideIn is the decision in state st.
func (r *Rule) decideIn(st State, why string, ev evidence, rd Readiness, in Input) Decision {
	switch st {
	case StateHeld:
		if r.GatesReboots() {
			in.Stale = ev.past // readiness seen on an earlier boot does not count
		}
		return r.decideFirst(rd, in)
	case StateDryRun:
		// As if the rule had tainted the node at creation: what a dry run reports.
		return r.decideFirst(rd, in)
	case StateUntainted:
		// What `gate status` reads of a node that came up untainted, as if the rule had
		// tainted it; nothing to write: the node is backfill's.
		d := r.decideFirst(rd, in)
		d.Write, d.Replace = WriteNone, false
		return d
	case StateJoining:
		return Decision{Write: WriteJoin, Reason: why}
	case StateReplacing:
		return Decision{TimedOut: true, Replace: true, Reason: why}
	case StateAdopting:
		return r.decideAdopting(why, rd, in)
	case StateRegated:
		return r.decideRegated(rd, in, ev)
	case StateReturned:
		return r.afterRegistration(why, rd, in)
	case StateRetainted, StateReleased:
		if r.Mode == Continuous {
			met, _, why, since := r.requirements(rd, in)
			return r.afterRelease(in, met, why, latest(since, in.UnmetSince))
		}
		met, _, _, _ := r.requirements(rd, in)
		return Decision{Met: met, Reason: why}
	case StateForeign:
		met, _, _, _ := r.requirements(rd, in)
		return Decision{Met: met, Reason: why}
	case StateLeft, StateRegateDropped:
		return Decision{Write: WriteRemove, Reason: why}
	case StateRebooted:
		return Decision{Write: WriteRegate, Reason: why}
	case StateBootUnrecorded, StateRebootedReady, StateRegateRemoved, StateRestarted:
		return Decision{Write: WriteRecord, Met: st == StateRebootedReady, Reason: why}
	case StateHeldRebooted, StateRebootedAgain:
		return Decision{Write: WriteStale, Reason: why}
	}
	return Decision{Reason: why}
}

// decideAdopting decides about a node in service that the rule has not released: the rule
// records it as released (WriteAdopt), with no taint to take off. A startup rule does so at
// once, since the node is in service whatever its readiness, and a rule that gates reboots
// must know the boot; a continuous rule once its requirements hold, lest it put its taint
// back on a node in service as its first act.
func (r *Rule) decideAdopting(why string, rd Readiness, in Input) Decision {
	met, _, unmet, _ := r.requirements(rd, in)
	if r.Mode == Continuous && !met {
		return Decision{Reason: why + ": " + unmet}
	}
	return Decision{Write: WriteAdopt, Met: met, Reason: why}
}

// decideFirst is the decision before the rule first releases the node.
func (r *Rule) decideFirst(rd Readiness, in Input) Decision {
	met, readyAt, why, _ := r.requirements(rd, in)
	created := in.Node.CreationTimestamp.Time
	if met {
		if minEnd := created.Add(r.MinHold.Duration); in.Now.Before(minEnd) {
			return Decision{Met: true, Reason: "minimum hold not reached", RequeueAfter: minEnd.Sub(in.Now), ReadyAt: readyAt}
		}
		return released(Decision{Met: true, Reason: r.readyReason(), ReadyAt: readyAt})
	}
	if r.MaxHold.Duration <= 0 {
		return Decision{Reason: why}
	}
	return r.timeout(created.Add(r.MaxHold.Duration), in.Now, fmt.Sprintf("maximum hold %s reached: %s", r.MaxHold.Duration, why), why)
}

// timeout is the decision of a hold whose requirements do not hold, with its maximum at
// deadline: wait until then, and then apply the timeout policy.
func (r *Rule) timeout(deadline, now time.Time, reason, why string) Decision {
	if now.Before(deadline) {
		return Decision{Reason: why, RequeueAfter: deadline.Sub(now)}
	}
	switch r.TimeoutPolicy {
	case TimeoutRelease:
		return released(Decision{TimedOut: true, Reason: reason})
	case TimeoutReplace:
		return Decision{TimedOut: true, Replace: true, Reason: reason}
	}
	return Decision{TimedOut: true, Reason: reason}
}

// released is d, asking for the release write.
func released(d Decision) Decision {
	d.Release, d.Write = true, WriteRelease
	return d
}

// afterRegistration decides a released node whose autoscaler put the rule's taint back when
// it registered the node: off again while the requirements hold (they held at the release),
// kept, and held like any node, while they do not.
func (r *Rule) afterRegistration(back string, rd Readiness, in Input) Decision {
	met, readyAt, why, _ := r.requirements(rd, in)
	if !met {
		return Decision{Reason: why + " (" + back + ")"}
	}
	return released(Decision{Met: true, ReadyAt: readyAt, Reason: back + ", after the release"})
}

// decideRegated waits for readiness of the boot the re-gate waits for: Ready on containers
// the record does not hold, whatever the clocks say. maxHold counts from the re-gate, on
// the gate's clock alone.
func (r *Rule) decideRegated(rd Readiness, in Input, ev evidence) Decision {
	fresh := in
	fresh.Stale = ev.past
	if ev.record == nil {
		// Re-gated by a gate before the evidence: what was Ready at or before its re-gate
		// is the old boot's, as that gate judged it.
		fresh.Stale = readyBy(in.Pods, ev.boot.RegatedAt)
	}
	met, readyAt, why, _ := r.requirements(rd, fresh)
	if met {
		return released(Decision{Met: true, ReadyAt: readyAt, Reason: fmt.Sprintf("ready again after the reboot to boot %s", ev.boot.Current)})
	}
	why = fmt.Sprintf("waiting for boot %s: %s", ev.boot.Current, why)
	if r.MaxHold.Duration <= 0 {
		return Decision{Reason: why}
	}
	return r.timeout(ev.boot.RegatedAt.Add(r.MaxHold.Duration), in.Now,
		fmt.Sprintf("maximum hold %s after the re-gate reached: %s", r.MaxHold.Duration, why), why)
}

// readyReason says what held, for the release event.
func (r *Rule) readyReason() string {
	if len(r.compiled().components) == 0 {
		return "all required node conditions hold"
	}
	return "all required components ready"
}

// latest is the later of two moments (zero counts as unknown).
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// afterRelease is the decision once the rule has released the node. since is when the
// requirement began to fail: the later of the evidence in the objects (the failing Pod's
// Ready transition, the failing condition's transition) and the caller's first sighting,
// so that neither a sighting that missed a brief recovery nor a restart of the gate
// miscounts the settle time.
func (r *Rule) afterRelease(in Input, met bool, why string, since time.Time) Decision {
	switch {
	case r.Mode != Continuous:
		return Decision{Met: met, Reason: "released"}
	case met && r.HasTaint(in.Node):
		return released(Decision{Met: true, Reason: "requirements hold again"})
	case met:
		return Decision{Met: true, Reason: "requirements hold"}
	case r.HasTaint(in.Node):
		return Decision{Reason: why}
	case since.IsZero():
		return Decision{Reason: why, RequeueAfter: r.SettleTime.Duration}
	}
	if wait := since.Add(r.SettleTime.Duration).Sub(in.Now); wait > 0 {
		return Decision{Reason: why, RequeueAfter: wait}
	}
	return Decision{Taint: true, Write: WriteTaint, Reason: fmt.Sprintf("%s for %s", why, in.Now.Sub(since).Round(time.Millisecond))}
}

// requirements reports whether the rule's components are ready and its conditions hold,
// with the latest ready time and, when not, why and since when the objects say so (zero
// when they do not: a Pod that is gone, a condition that is absent).
func (r *Rule) requirements(rd Readiness, in Input) (bool, time.Time, string, time.Time) {
	c := r.compiled()
	var readyAt time.Time
	if len(c.components) > 0 {
		ok, at, why, since := componentsReady(in, c.components, rd)
		if !ok {
			return false, time.Time{}, why, since
		}
		readyAt = at
	}
	for _, cond := range c.conditions {
		if held, since := conditionHolds(in.Node, cond); !held {
			return false, time.Time{}, fmt.Sprintf("node condition %s is not %s", cond.Type, cond.Status), since
		}
	}
	return true, readyAt, "", time.Time{}
}

// componentsReady applies the component rules: at least one component has a counted Pod on
// the node, and every component that has one (or a DaemonSet targeting the node) has a
// ready one. It returns the latest ready time and, when not ready, why and since when the
// failing Pod's Ready condition has said so.
func componentsReady(in Input, comps []compiledComponent, rd Readiness) (bool, time.Time, string, time.Time) {
	var latestReady time.Time
	present := 0
	for i := range comps {
		comp := &comps[i]
		has, readyPod, unreadySince := false, (*corev1.Pod)(nil), time.Time{}
		for _, p := range in.Pods {
			if !counts(p, in.Node, comp) {
				continue
			}
			has = true
			if podReady(p, rd) && fresh(p, in.Stale) {
				readyPod = p
				break
			}
			unreadySince = latest(unreadySince, notReadySince(p))
		}
		if !has {
			if why := in.Blocked[comp.Name]; in.Expected[comp.Name] && why != "" {
				return false, time.Time{}, fmt.Sprintf("component %q cannot land on the node: %s", comp.Name, why), time.Time{}
			}
			if in.Expected[comp.Name] {
				return false, time.Time{}, fmt.Sprintf("component %q: its DaemonSet targets the node, no Pod yet", comp.Name), time.Time{}
			}
			continue
		}
		present++
		if readyPod == nil {
			return false, time.Time{}, fmt.Sprintf("component %q not ready", comp.Name), unreadySince
		}
		if t := readySince(readyPod); t.After(latestReady) {
			latestReady = t
		}
	}
	if present == 0 {
		return false, time.Time{}, "no init pod on the node yet", time.Time{}
	}
	return true, latestReady, "", time.Time{}
}

// notReadySince is when the Pod's Ready condition last turned to not ready, or zero.
func notReadySince(p *corev1.Pod) time.Time {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// counts applies the per-Pod rules: this component, this node, not terminating, and not
// older than the node.
func counts(p *corev1.Pod, node *corev1.Node, comp *compiledComponent) bool {
	return p.Spec.NodeName == node.Name &&
		p.DeletionTimestamp == nil &&
		!p.CreationTimestamp.Before(&node.CreationTimestamp) &&
		(comp.Namespace == "" || comp.Namespace == p.Namespace) &&
		comp.selector.Matches(labels.Set(p.Labels))
}

// podReady: the early-ready annotation, or (unless annotation-only) the Ready condition
// and every container ready.
func podReady(p *corev1.Pod, rd Readiness) bool {
	if p.Annotations[rd.Annotation] == "true" {
		return true
	}
	if rd.AnnotationOnly || !hasPodReady(p) {
		return false
	}
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false
	}
	for i := range p.Status.ContainerStatuses {
		if !p.Status.ContainerStatuses[i].Ready {
			return false
		}
	}
	return true
}

// readyBy is the fingerprints of the Pods Ready since at or before t.
func readyBy(pods []*corev1.Pod, t time.Time) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if hasPodReady(p) && !readySince(p).After(t) {
			out[Fingerprint(p)] = true
		}
	}
	return out
}

// fresh reports whether the Pod's readiness counts with the stale set: always when it is nil;
// else only when Ready by its condition, on containers whose fingerprint it does not hold.
func fresh(p *corev1.Pod, stale map[string]bool) bool {
	return stale == nil || (hasPodReady(p) && !stale[Fingerprint(p)])
}

func hasPodReady(p *corev1.Pod) bool {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return p.Status.Conditions[i].Status == corev1.ConditionTrue
		}
	}
	return false
}

func readySince(p *corev1.Pod) time.Time {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// conditionHolds reports whether the node's condition has the wanted status (an absent
// one, its default), and when it does not, since when its status has been what it is
// (zero when the condition is absent).
func conditionHolds(node *corev1.Node, c condition) (bool, time.Time) {
	nc := NodeCondition(node, c.Type)
	switch {
	case nc == nil:
		return c.Default != "" && c.Default == c.Status, time.Time{}
	case nc.Status == c.Status:
		return true, time.Time{}
	}
	return false, nc.LastTransitionTime.Time
}

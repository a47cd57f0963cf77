package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// Violation kinds.
const (
	// KindEarlyPod: a Pod that does not tolerate the startup taint was bound to a gated node
	// before the node was released (or the node was never released).
	KindEarlyPod = "early-pod"
	// KindLateRelease: a gated node was released after its bound.
	KindLateRelease = "late-release"
	// KindStuck: a gated node was never released (beyond the scenario's expected count).
	KindStuck = "stuck"
	// KindForeignTaintLost: a taint the gate does not own disappeared without its owner
	// removing it.
	KindForeignTaintLost = "foreign-taint-lost"
	// KindCompletedRewritten: completedAt changed or vanished after being set.
	KindCompletedRewritten = "completed-rewritten"
	// KindPrematureRelease: released before its init Pods were ready, and not by a
	// max-hold timeout under the release policy.
	KindPrematureRelease = "premature-release"
	// KindEarlyRelease: released before the minimum hold.
	KindEarlyRelease = "early-release"
	// KindBusyBackfilled: a node that came up untainted was tainted after a workload Pod
	// was already bound to it.
	KindBusyBackfilled = "busy-backfilled"
	// KindDryRunWrote: a dry-run rule's taint or completion annotation appeared on a node.
	KindDryRunWrote = "dry-run-wrote"
	// KindBoundWhileUnready: a workload Pod was bound to a released node while a continuous
	// rule's requirement did not hold on it (ordered by resourceVersion).
	KindBoundWhileUnready = "bound-while-unready"
	// KindRetaintLate: a continuous rule's taint came back later than its bound after the
	// requirement stopped holding, or not at all.
	KindRetaintLate = "retaint-late"
	// KindTaintOutsideSelector: a rule's taint was on a node its selector does not match, in
	// the node's first stored version (admission tainted the wrong node) or in its last (the
	// node left the selector and kept the taint).
	KindTaintOutsideSelector = "taint-outside-selector"
	// KindBoundBeforeReinit: a workload Pod was bound to a rebooted node after the node
	// reported its new boot ID and before its init Pods were Ready again on that boot.
	KindBoundBeforeReinit = "bound-before-reinit"
	// KindHeldAfterReinit: a rebooted node's init Pods were Ready again on the new boot, and
	// a startup rule's taint was still on at the end of the run.
	KindHeldAfterReinit = "held-after-reinit"
)

// Bounds are the limits a run is judged against: the scenario's own, and the gate
// configuration's holds.
type Bounds struct {
	// ReleasedWithin bounds how long after a node could be released (init Pods ready, or
	// the max hold over) it is (0: no bound).
	ReleasedWithin time.Duration
	// MinHold is the gate's minimum hold.
	MinHold time.Duration
	// TimeoutRelease is the gate's max hold when its policy releases on timeout (0: a
	// release without readiness is never allowed).
	TimeoutRelease time.Duration
	// RetaintWithin bounds a continuous rule's re-taint after its requirement stopped
	// holding (0: not judged).
	RetaintWithin time.Duration
	// StartupTaints are the startup rules' taints (key:Effect), which no released node may
	// carry at the end unless a reboot re-gated it.
	StartupTaints []string
}

// clockSlack absorbs the apiserver's and this process's reading of one machine clock.
const clockSlack = 50 * time.Millisecond

// Violation is one broken invariant.
type Violation struct {
	Kind   string `json:"kind"`
	Node   string `json:"node"`
	Pod    string `json:"pod,omitempty"`
	Detail string `json:"detail"`
	// Times in ms since the run started, and the resourceVersions compared.
	AtMS       int64  `json:"at_ms"`
	ReleasedMS int64  `json:"released_ms,omitempty"`
	RV         uint64 `json:"rv,omitempty"`
	ReleasedRV uint64 `json:"released_rv,omitempty"`
}

// Verdict is the checker's reading of one run.
type Verdict struct {
	Violations []Violation
	Gated      int
	Released   int
	Stuck      int
	// EarlyTolerating counts tolerating Pods (agents) bound before release: allowed, reported.
	EarlyTolerating int
	WorkloadPods    int
	ReleaseLatency  []time.Duration // init ready -> released
	Hold            []time.Duration // created -> released
	// RetaintLatency: a continuous requirement failing -> the rule's taint back on.
	RetaintLatency []time.Duration
	// BoundWhileUnready counts workload Pods bound in those windows.
	BoundWhileUnready int
	// Reboots counts the reboots of gated nodes; RegateLatency is, for each whose taint came
	// back, from the new boot ID reported to the taint back; BoundBeforeReinit counts the
	// workload Pods bound between a reboot and the node's re-initialisation.
	Reboots           int
	RegateLatency     []time.Duration
	BoundBeforeReinit int
}

// Check evaluates the invariants over the recorded nodes. It is pure and knows nothing of
// the gate's code: it reads only what the API showed.
func Check(records []record.NodeRecord, start time.Time, b Bounds) Verdict {
	var v Verdict
	ms := func(m record.Mark) int64 {
		if m.IsZero() {
			return 0
		}
		return m.Time.Sub(start).Milliseconds()
	}
	v.WorkloadPods = WorkloadPods(records)
	for i := range records {
		rec := &records[i]
		if !rec.Gated {
			continue
		}
		v.Gated++
		released := !rec.Released.IsZero()
		for _, b := range rec.Bindings {
			early := !released || b.Mark.RV < rec.Released.RV
			switch {
			case !early:
			case b.Tolerates || b.Init:
				v.EarlyTolerating++
			default:
				v.Violations = append(v.Violations, Violation{
					Kind: KindEarlyPod, Node: rec.Name, Pod: b.Pod,
					Detail: earlyDetail(released, b, rec),
					AtMS:   ms(b.Mark), ReleasedMS: ms(rec.Released), RV: b.Mark.RV, ReleasedRV: rec.Released.RV,
				})
			}
		}
		switch {
		case released:
			v.Released++
			hold := rec.Released.Time.Sub(rec.Created.Time)
			v.Hold = append(v.Hold, hold)
			if ready := rec.ReadyMoment(); !ready.IsZero() && !ready.After(rec.Released.Time) {
				v.ReleaseLatency = append(v.ReleaseLatency, rec.Released.Time.Sub(ready))
			}
			v.Violations = append(v.Violations, releaseViolations(rec, hold, b, ms)...)
		case rec.Deleted.IsZero() && !rec.Tainted.IsZero():
			v.Stuck++
		}
		if busy := busyBeforeTaint(rec); busy != "" {
			v.Violations = append(v.Violations, Violation{Kind: KindBusyBackfilled, Node: rec.Name, Pod: busy,
				Detail: "tainted after a workload Pod was bound", AtMS: ms(rec.Tainted), RV: rec.Tainted.RV})
		}
		for _, t := range rec.LostTaints {
			v.Violations = append(v.Violations, Violation{Kind: KindForeignTaintLost, Node: rec.Name, Detail: "lost taint " + t})
		}
		if rewritten(rec.CompletedAt) {
			v.Violations = append(v.Violations, Violation{Kind: KindCompletedRewritten, Node: rec.Name,
				Detail: fmt.Sprintf("completion annotations took values %q", rec.CompletedAt)})
		}
		v.Violations = append(v.Violations, ruleViolations(rec)...)
		v.Violations = append(v.Violations, continuousViolations(rec, b, &v, ms)...)
		v.Violations = append(v.Violations, rebootViolations(rec, b.StartupTaints, &v, ms)...)
		v.Violations = append(v.Violations, stuckAfterRegistration(rec, b.StartupTaints, ms)...)
	}
	return v
}

// releaseViolations judges one release: in time, not before the min hold, and not before
// the init Pods were ready (unless the max hold ran out under the release policy).
func releaseViolations(rec *record.NodeRecord, hold time.Duration, b Bounds, ms func(record.Mark) int64) []Violation {
	var out []Violation
	add := func(kind, detail string) {
		out = append(out, Violation{Kind: kind, Node: rec.Name, Detail: detail, AtMS: ms(rec.Released), RV: rec.Released.RV})
	}
	// The gate counts holds from creationTimestamp, and this process saw the release no
	// earlier than it happened: so released-seen minus creationTimestamp can only
	// overstate the gate's hold, never understate it. Judging the min and max holds on it
	// is exact, with no allowance for watch lag.
	gateHold := rec.Released.Time.Sub(rec.CreatedAt)
	if b.MinHold > 0 && gateHold < b.MinHold-clockSlack {
		add(KindEarlyRelease, fmt.Sprintf("held %s from creationTimestamp, minimum hold %s", gateHold.Round(time.Millisecond), b.MinHold))
	}
	readyFirst := !rec.InitReady.IsZero() && rec.InitReady.RV <= rec.Released.RV
	timedOut := b.TimeoutRelease > 0 && gateHold >= b.TimeoutRelease-clockSlack
	// Backfill that finds a workload Pod already there takes its taint back and marks the
	// node released: that is no premature release (the early Pod is reported on its own).
	undone := !rec.TaintedAtCreate && busyBeforeRelease(rec)
	if !readyFirst && !timedOut && !undone {
		add(KindPrematureRelease, fmt.Sprintf("released at rv %d after %s, init pods ready at rv %d",
			rec.Released.RV, gateHold.Round(time.Millisecond), rec.InitReady.RV))
	}
	// The release bound is the gate's own: from the moment it could release (init Pods
	// ready, or the max hold over) to the release. How long the plane took to schedule and
	// start the init Pods is not the gate's to answer for.
	if b.ReleasedWithin > 0 {
		from := rec.Created.Time
		switch {
		case readyFirst:
			from = rec.ReadyMoment()
		case timedOut:
			from = rec.CreatedAt.Add(b.TimeoutRelease)
		}
		if late := rec.Released.Time.Sub(from); late > b.ReleasedWithin {
			add(KindLateRelease, fmt.Sprintf("released %s after it could be (held %s), bound %s",
				late.Round(time.Millisecond), hold.Round(time.Millisecond), b.ReleasedWithin))
		}
	}
	return out
}

// rewritten: some completion annotation (each entry KEY=VALUE) changed after it was set.
func rewritten(changes []string) bool {
	seen := map[string]bool{}
	for _, c := range changes {
		key, _, _ := strings.Cut(c, "=")
		if seen[key] {
			return true
		}
		seen[key] = true
	}
	return false
}

// ruleViolations are the per-rule invariants of one node: dry-run rules write nothing, and
// a rule's taint is only ever on nodes its selector matches (at creation and at the end).
func ruleViolations(rec *record.NodeRecord) []Violation {
	var out []Violation
	for _, name := range rec.DryRunWrites {
		out = append(out, Violation{Kind: KindDryRunWrote, Node: rec.Name, Detail: fmt.Sprintf("dry-run rule %s's taint or completion appeared", name)})
	}
	for _, t := range rec.OutsideAtCreate {
		out = append(out, Violation{Kind: KindTaintOutsideSelector, Node: rec.Name, Detail: "tainted at creation: " + t})
	}
	for _, t := range rec.OutsideNow {
		out = append(out, Violation{Kind: KindTaintOutsideSelector, Node: rec.Name, Detail: "still carries " + t})
	}
	return out
}

// continuousViolations judges the windows in which a continuous rule's requirement did not
// hold on the released node: no workload Pod bound inside one, and the taint back within
// the bound. It adds the re-taint latencies and the Pods bound to v.
func continuousViolations(rec *record.NodeRecord, b Bounds, v *Verdict, ms func(record.Mark) int64) []Violation {
	var out []Violation
	for _, w := range rec.Unready {
		for _, bd := range rec.Bindings {
			if bd.Workload() && bd.Mark.RV > w.From.RV && (w.To.IsZero() || bd.Mark.RV < w.To.RV) {
				v.BoundWhileUnready++
				out = append(out, Violation{Kind: KindBoundWhileUnready, Node: rec.Name, Pod: bd.Pod, AtMS: ms(bd.Mark), RV: bd.Mark.RV,
					Detail: fmt.Sprintf("bound at rv %d, requirement failing since rv %d", bd.Mark.RV, w.From.RV)})
			}
		}
		back := record.Mark{}
		for _, m := range rec.Retainted {
			if m.RV > w.From.RV && (w.To.IsZero() || m.RV < w.To.RV) {
				back = m
				break
			}
		}
		if !back.IsZero() {
			v.RetaintLatency = append(v.RetaintLatency, back.Time.Sub(w.From.Time))
		}
		if b.RetaintWithin <= 0 {
			continue
		}
		switch {
		case !back.IsZero() && back.Time.Sub(w.From.Time) > b.RetaintWithin:
			out = append(out, Violation{Kind: KindRetaintLate, Node: rec.Name, AtMS: ms(back), RV: back.RV,
				Detail: fmt.Sprintf("taint back %s after the requirement failed, bound %s", back.Time.Sub(w.From.Time).Round(time.Millisecond), b.RetaintWithin)})
		case back.IsZero() && (w.To.IsZero() || w.To.Time.Sub(w.From.Time) > b.RetaintWithin):
			out = append(out, Violation{Kind: KindRetaintLate, Node: rec.Name, AtMS: ms(w.From), RV: w.From.RV,
				Detail: fmt.Sprintf("requirement failing since rv %d and the taint never came back", w.From.RV)})
		}
	}
	return out
}

// busyBeforeTaint names a workload Pod bound to a node that came up untainted, before the
// taint was added (backfill must leave busy nodes alone), or "".
func busyBeforeTaint(rec *record.NodeRecord) string {
	if rec.TaintedAtCreate || rec.Tainted.IsZero() {
		return ""
	}
	for _, b := range rec.Bindings {
		if b.Workload() && b.Mark.RV < rec.Tainted.RV {
			return b.Pod
		}
	}
	return ""
}

func busyBeforeRelease(rec *record.NodeRecord) bool {
	for _, b := range rec.Bindings {
		if b.Workload() && b.Mark.RV < rec.Released.RV {
			return true
		}
	}
	return false
}

func earlyDetail(released bool, b record.Binding, rec *record.NodeRecord) string {
	if !released {
		return fmt.Sprintf("bound at rv %d; node never released", b.Mark.RV)
	}
	return fmt.Sprintf("bound at rv %d, node released at rv %d", b.Mark.RV, rec.Released.RV)
}

// Percentiles of durations, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// PercentilesOf gives the percentiles of ds by nearest rank, on a sorted copy.
func PercentilesOf(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(s) {
			i = len(s) - 1
		}
		return float64(s[i].Microseconds()) / 1000
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

// WorkloadPods counts the workload Pods bound in records: what Check reports as
// Verdict.WorkloadPods, for a caller that needs only the count and not the whole verdict
// (the runner polls it while a step waits for its Pods to be placed).
func WorkloadPods(records []record.NodeRecord) int {
	n := 0
	for i := range records {
		for _, b := range records[i].Bindings {
			if b.Workload() {
				n++
			}
		}
	}
	return n
}

// Held counts the gated nodes, not deleted, that are not released yet: what a step that
// waits for every joined node's release polls.
func Held(records []record.NodeRecord) int {
	n := 0
	for i := range records {
		r := &records[i]
		if r.Gated && r.Deleted.IsZero() && r.Released.IsZero() {
			n++
		}
	}
	return n
}

package check

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Condition-taint and eviction kinds.
const (
	// KindTaintedWithoutMatch: a condition taint appeared on a node whose conditions did not
	// match, or stayed longer than its bound after they stopped matching.
	KindTaintedWithoutMatch = "tainted-without-match"
	// KindEvictedWithoutMatch: a Pod was evicted from a node whose conditions never matched.
	KindEvictedWithoutMatch = "evicted-without-match"
	// KindBudgetExceeded: more nodes carried a NoExecute condition taint at once than its
	// budget.
	KindBudgetExceeded = "budget-exceeded"
	// KindEvicted: more Pods were evicted than the scenario allows.
	KindEvicted = "evicted"
	// KindReplacementLate: a StatefulSet Pod of a node whose kubelet stopped was not running
	// elsewhere within its bound.
	KindReplacementLate = "replacement-late"
)

// Conditions judges the scenario's condition-taint, eviction and replacement expectations
// over the records, as of end. It returns the violations and, per replaced Pod, the time
// from its node's kubelet stopping to the replacement running.
func Conditions(recs []record.NodeRecord, start, end time.Time, exp scenario.Expect) ([]Violation, []time.Duration) {
	var out []Violation
	if ct := exp.ConditionTaint; ct != nil {
		m := newMatcher(ct)
		for i := range recs {
			out = append(out, m.taintedWithoutMatch(&recs[i], start, end)...)
			out = append(out, m.evictedWithoutMatch(&recs[i], start)...)
		}
		if ct.MaxTainted > 0 {
			out = append(out, budgetExceeded(recs, m.taint, ct.MaxTainted, start)...)
		}
	}
	if exp.MaxEvictions != nil {
		out = append(out, tooManyEvictions(recs, *exp.MaxEvictions, start)...)
	}
	var latencies []time.Duration
	if exp.ReplacementWithin > 0 {
		var late []Violation
		late, latencies = replacements(recs, exp.ReplacementWithin, start, end)
		out = append(out, late...)
	}
	return out, latencies
}

// matcher is the ground truth of one condition taint.
type matcher struct {
	ct     *scenario.ConditionTaint
	taint  string           // key:Effect, as record.Snapshot lists taints
	status []*regexp.Regexp // ct.While's, compiled once
}

func newMatcher(ct *scenario.ConditionTaint) *matcher {
	m := &matcher{ct: ct, taint: ct.Taint.Key + ":" + ct.Taint.Effect}
	for _, w := range ct.While {
		re, _ := w.Regexp() // scenario validation compiled it
		m.status = append(m.status, re)
	}
	return m
}

// matches reports whether every wanted condition is among the facts ("Type=Status").
func (m *matcher) matches(facts []string) bool {
	for i, w := range m.ct.While {
		ok := false
		for _, f := range facts {
			t, s, _ := strings.Cut(f, "=")
			if t == w.Type && m.status[i].MatchString(s) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// at is the snapshot in effect at t (nil before the first).
func at(snaps []record.Snapshot, t time.Time) *record.Snapshot {
	i := sort.Search(len(snaps), func(i int) bool { return snaps[i].Mark.Time.After(t) })
	if i == 0 {
		return nil
	}
	return &snaps[i-1]
}

func (m *matcher) matchingAt(rec *record.NodeRecord, t time.Time) bool {
	s := at(rec.Conditions, t)
	return s != nil && m.matches(s.Facts)
}

// taintedWithoutMatch: the taint appears on a version whose conditions (seen before it, on
// the same watch) do not match; or, unless the taint may be kept, it is still on Within
// after they stopped matching.
func (m *matcher) taintedWithoutMatch(rec *record.NodeRecord, start, end time.Time) []Violation {
	var out []Violation
	had := false
	for _, s := range rec.Taints {
		has := slices.Contains(s.Facts, m.taint)
		if has && !had && !m.matchingAt(rec, s.Mark.Time) {
			out = append(out, Violation{Kind: KindTaintedWithoutMatch, Node: rec.Name, AtMS: sinceMS(s.Mark.Time, start), RV: s.Mark.RV,
				Detail: fmt.Sprintf("taint %s put on while the node's conditions do not match", m.taint)})
		}
		had = has
	}
	if m.ct.Keep {
		return out
	}
	for i, c := range rec.Conditions {
		if i == 0 || !m.matches(rec.Conditions[i-1].Facts) || m.matches(c.Facts) {
			continue
		}
		// The conditions stopped matching at c: the taint must be off within the bound.
		deadline := c.Mark.Time.Add(m.ct.Within)
		if off := m.taintOffAfter(rec, c.Mark.Time); (off.IsZero() && end.After(deadline)) || off.After(deadline) {
			out = append(out, Violation{Kind: KindTaintedWithoutMatch, Node: rec.Name, AtMS: sinceMS(c.Mark.Time, start), RV: c.Mark.RV,
				Detail: fmt.Sprintf("taint %s still on %s after the conditions stopped matching", m.taint, m.ct.Within)})
		}
	}
	return out
}

// taintOffAfter is the first moment at or after t when the node is seen without the taint.
func (m *matcher) taintOffAfter(rec *record.NodeRecord, t time.Time) time.Time {
	for _, s := range rec.Taints {
		if !s.Mark.Time.Before(t) && !slices.Contains(s.Facts, m.taint) {
			return s.Mark.Time
		}
	}
	if s := at(rec.Taints, t); s != nil && !slices.Contains(s.Facts, m.taint) {
		return t
	}
	return time.Time{}
}

// evictedWithoutMatch: an eviction from a node whose conditions never matched before it.
func (m *matcher) evictedWithoutMatch(rec *record.NodeRecord, start time.Time) []Violation {
	var out []Violation
	for _, e := range rec.Evictions {
		ever := false
		for _, c := range rec.Conditions {
			if !c.Mark.Time.After(e.Mark.Time) && m.matches(c.Facts) {
				ever = true
				break
			}
		}
		if !ever {
			out = append(out, Violation{Kind: KindEvictedWithoutMatch, Node: rec.Name, Pod: e.Pod, AtMS: sinceMS(e.Mark.Time, start), RV: e.Mark.RV,
				Detail: "evicted from a node whose conditions never matched the rule"})
		}
	}
	return out
}

// budgetExceeded replays every node's taint changes in time order and reports the first
// moment more than max nodes carry the taint.
func budgetExceeded(recs []record.NodeRecord, taint string, most int, start time.Time) []Violation {
	type change struct {
		node string
		mark record.Mark
		on   bool
	}
	var changes []change
	for i := range recs {
		had := false
		for _, s := range recs[i].Taints {
			if has := slices.Contains(s.Facts, taint); has != had {
				changes = append(changes, change{recs[i].Name, s.Mark, has})
				had = has
			}
		}
	}
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].mark.RV < changes[b].mark.RV })
	n := 0
	for _, c := range changes {
		if c.on {
			n++
		} else {
			n--
		}
		if n > most {
			return []Violation{{Kind: KindBudgetExceeded, Node: c.node, AtMS: sinceMS(c.mark.Time, start), RV: c.mark.RV,
				Detail: fmt.Sprintf("%d nodes carry %s at once, the budget is %d", n, taint, most)}}
		}
	}
	return nil
}

func tooManyEvictions(recs []record.NodeRecord, most int, start time.Time) []Violation {
	var all []record.Eviction
	node := map[string]string{}
	for i := range recs {
		for _, e := range recs[i].Evictions {
			all = append(all, e)
			node[e.Pod] = recs[i].Name
		}
	}
	if len(all) <= most {
		return nil
	}
	first := all[0]
	return []Violation{{Kind: KindEvicted, Node: node[first.Pod], Pod: first.Pod, AtMS: sinceMS(first.Mark.Time, start), RV: first.Mark.RV,
		Detail: fmt.Sprintf("%d pods evicted, at most %d expected", len(all), most)}}
}

// replacement is a StatefulSet Pod bound to a node before its kubelet stopped, and when it
// first ran on another node after that (zero: not yet).
type replacement struct {
	dead, pod        string
	stopped, running time.Time
}

// replacementsOf lists the StatefulSet Pods of every node whose kubelet stopped.
func replacementsOf(recs []record.NodeRecord) []replacement {
	var out []replacement
	for i := range recs {
		dead := &recs[i]
		if dead.KubeletStopped.IsZero() {
			continue
		}
		for _, b := range dead.Bindings {
			if b.Stateful && !b.Mark.Time.After(dead.KubeletStopped) {
				out = append(out, replacement{dead: dead.Name, pod: b.Pod, stopped: dead.KubeletStopped,
					running: replacementRunning(recs, dead.Name, b.Pod, dead.KubeletStopped)})
			}
		}
	}
	return out
}

// replacements: every StatefulSet Pod bound to a node before its kubelet stopped must run
// on another node within the bound.
func replacements(recs []record.NodeRecord, within time.Duration, start, end time.Time) ([]Violation, []time.Duration) {
	var out []Violation
	var latencies []time.Duration
	for _, r := range replacementsOf(recs) {
		took := r.running.Sub(r.stopped)
		if !r.running.IsZero() {
			latencies = append(latencies, took)
		}
		var detail string
		switch {
		case !r.running.IsZero() && took > within:
			detail = fmt.Sprintf("running elsewhere only %s after the node's kubelet stopped (bound %s)", took.Round(time.Millisecond), within)
		case r.running.IsZero() && end.Sub(r.stopped) > within:
			detail = fmt.Sprintf("not running elsewhere %s after the node's kubelet stopped", within)
		default:
			continue
		}
		out = append(out, Violation{Kind: KindReplacementLate, Node: r.dead, Pod: r.pod, AtMS: sinceMS(r.stopped, start), Detail: detail})
	}
	return out, latencies
}

// replacementRunning is when the Pod first ran on a node other than dead, after since.
func replacementRunning(recs []record.NodeRecord, dead, pod string, since time.Time) time.Time {
	var first time.Time
	for i := range recs {
		if recs[i].Name == dead {
			continue
		}
		for _, b := range recs[i].Bindings {
			if b.Pod == pod && !b.Running.IsZero() && b.Running.Time.After(since) && (first.IsZero() || b.Running.Time.Before(first)) {
				first = b.Running.Time
			}
		}
	}
	return first
}

// ReplacementsPending reports whether a StatefulSet Pod of a node whose kubelet stopped
// has yet to run elsewhere: the run is not settled before they have, or its window ends.
func ReplacementsPending(recs []record.NodeRecord) bool {
	for _, r := range replacementsOf(recs) {
		if r.running.IsZero() {
			return true
		}
	}
	return false
}

// sinceMS is t in milliseconds since start.
func sinceMS(t, start time.Time) int64 { return t.Sub(start).Milliseconds() }

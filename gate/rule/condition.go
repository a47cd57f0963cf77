package rule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultMaxTainted is the eviction budget of a NoExecute condition rule that sets none:
// at most a tenth of the nodes its selector matches carry its taint at once, rounded up so
// that a small pool can still lose one node. One wrong regular expression then evicts a
// tenth of a pool, not all of it; the node lifecycle controller brakes the same way when
// much of a zone is unhealthy. A pool that must lose more at once (a whole spot zone
// reclaimed) says so with its own maxTainted.
var DefaultMaxTainted = intstr.FromString("10%")

// Match is one node condition that a condition rule matches: the condition's type, and a
// regular expression that the condition's whole status must match ("Kaput|Ruined" matches
// "Kaput", never "NotKaput").
type Match struct {
	Type   corev1.NodeConditionType `json:"type"`
	Status string                   `json:"status"`
}

type compiledMatch struct {
	Match
	status *regexp.Regexp
}

// compileMatch checks a condition rule's fields, and that no other mode sets them: a field
// that would silently not apply is an error.
func (r *Rule) compileMatch(field func(string) string, errs *Errors) []compiledMatch {
	if r.Mode != Condition {
		for _, f := range []struct {
			name string
			set  bool
		}{{"match", len(r.Match) > 0}, {"keepAfterClear", r.KeepAfterClear}, {"maxTainted", r.MaxTainted != nil}} {
			if f.set {
				errs.Add(field(f.name), "only a rule with mode %q uses it", Condition)
			}
		}
		return nil
	}
	r.validateConditionMode(field, errs)
	if len(r.Match) == 0 {
		errs.Add(field("match"), "a condition rule needs at least one condition to match")
	}
	var out []compiledMatch
	for i, m := range r.Match {
		f := func(s string) string { return field(fmt.Sprintf("match[%d].%s", i, s)) }
		if m.Type == "" {
			errs.Add(f("type"), "must not be empty")
		}
		re, err := regexp.Compile(`^(?:` + m.Status + `)$`)
		if err != nil {
			errs.Add(f("status"), "%q: not a regular expression: %v", m.Status, err)
			continue
		}
		out = append(out, compiledMatch{Match: m, status: re})
	}
	return out
}

// validateConditionMode refuses what a condition rule does not use, and checks its budget.
func (r *Rule) validateConditionMode(field func(string) string, errs *Errors) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"components", len(r.Components) > 0},
		{"conditions", len(r.Conditions) > 0},
		{"minHold", r.MinHold.Duration != 0},
		{"maxHold", r.MaxHold.Duration != 0},
		{"settleTime", r.SettleTime.Duration != 0},
		{"onReboot", r.OnReboot != RebootIgnore},
	} {
		if f.set {
			errs.Add(field(f.name), "a condition rule does not use it: its taint is on exactly while match holds")
		}
	}
	evicts := r.Taint.Effect == corev1.TaintEffectNoExecute
	if r.MaxTainted != nil && !evicts && validEffect(r.Taint.Effect) {
		errs.Add(field("maxTainted"), "only a NoExecute rule evicts, so only it has an eviction budget")
		return
	}
	if !evicts {
		return
	}
	if r.MaxTainted == nil {
		r.MaxTainted = &DefaultMaxTainted
	}
	if n, err := intstr.GetScaledValueFromIntOrPercent(r.MaxTainted, 100, true); err != nil || n < 1 ||
		(r.MaxTainted.Type == intstr.String && n > 100) {
		errs.Add(field("maxTainted"), "%q: must be a count of at least 1 or a percentage from 1%% to 100%%", r.MaxTainted.String())
	}
}

// MatchesConditions reports whether every condition in the rule's match is present on the
// node with a matching status. When they all match, since is when the last of them began
// to (its latest transition); when not, why names the first that does not.
func (r *Rule) MatchesConditions(node *corev1.Node) (ok bool, why string, since time.Time) {
	for _, m := range r.compiled().match {
		c := NodeCondition(node, m.Type)
		switch {
		case c == nil:
			return false, fmt.Sprintf("node condition %s is absent", m.Type), time.Time{}
		case !m.status.MatchString(string(c.Status)):
			return false, fmt.Sprintf("node condition %s is %s, not %s", m.Type, c.Status, m.Status), time.Time{}
		}
		since = latest(since, c.LastTransitionTime.Time)
	}
	return true, "", since
}

// NodeCondition is the node's condition of type t, or nil.
func NodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// ConditionDecision is what a condition rule does about one node.
type ConditionDecision struct {
	// Match: every condition matches now.
	Match bool
	// Taint: put the taint on (a NoExecute rule first asks its budget).
	Taint bool
	// Clear: take off the taint this rule placed (or, when the operator already took it
	// off, the rule's mark that it had).
	Clear bool
	// Left: the node left the rule's selector (Clear is set when the rule placed the taint).
	Left bool
	// Since is when the match began, for the budget's order.
	Since  time.Time
	Reason string
}

// DecideCondition says what a condition rule does about a node. It is pure. The rule lifts
// only a taint it placed itself (its annotation, or the gate's mark of its taint, is on the
// node), never one an operator put there by hand: the manual
// out-of-service flow uses the same key. A node the rule no longer selects loses the taint
// the rule placed, keepAfterClear or not: no rule would ever take it off.
func DecideCondition(r *Rule, node *corev1.Node) ConditionDecision {
	has, ours := r.HasTaint(node), r.Completed(node) || r.Placed(node)
	if !r.Matches(node) {
		if has && ours {
			return ConditionDecision{Clear: true, Left: true, Reason: fmt.Sprintf("the node left the rule's selector %q: its taint comes off", r.NodeSelector)}
		}
		return ConditionDecision{Reason: "the rule does not select the node"}
	}
	match, why, since := r.MatchesConditions(node)
	switch {
	case match && !has:
		return ConditionDecision{Match: true, Taint: true, Since: since, Reason: r.matchReason()}
	case match:
		return ConditionDecision{Match: true, Since: since, Reason: r.matchReason()}
	case ours && has && r.KeepAfterClear:
		return ConditionDecision{Reason: why + "; keepAfterClear: the operator removes the taint"}
	case ours:
		return ConditionDecision{Clear: true, Reason: why}
	}
	return ConditionDecision{Reason: why}
}

func (r *Rule) matchReason() string {
	parts := make([]string, len(r.Match))
	for i, m := range r.Match {
		parts[i] = fmt.Sprintf("%s=~%s", m.Type, m.Status)
	}
	return "node conditions match " + strings.Join(parts, ", ")
}

// Budgeted reports whether the rule has an eviction budget: a NoExecute condition rule.
func (r *Rule) Budgeted() bool {
	return r.Mode == Condition && r.Taint.Effect == corev1.TaintEffectNoExecute
}

// Budget is how many of the selected nodes may carry a budgeted rule's taint at once.
func (r *Rule) Budget(selected int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(r.MaxTainted, selected, true)
	if err != nil { // Compile refused it; be safe anyway
		return 0
	}
	return n
}

// BudgetUse is the budget's state for one decision.
type BudgetUse struct {
	// Allowed: this node may be tainted now.
	Allowed bool
	// Used is how many selected nodes carry the taint (or, for a dry-run rule, would);
	// Budget is how many may.
	Used, Budget int
}

// AllowTaint decides whether a budgeted rule may taint node now. nodes are every node the
// gate knows; tainted says whether one counts as carrying the rule's taint. The nodes that
// match and are not tainted wait in a stable order, the earliest match first, then by
// name; node may be tainted when the tainted ones and those ahead of it fit in the budget.
// A taint already placed is never lifted to make room.
func AllowTaint(r *Rule, node *corev1.Node, nodes []*corev1.Node, tainted func(*corev1.Node) bool) BudgetUse {
	type waiting struct {
		name  string
		since time.Time
	}
	var queue []waiting
	selected, used := 0, 0
	for _, n := range nodes {
		if !r.Matches(n) {
			continue
		}
		selected++
		if tainted(n) {
			used++
			continue
		}
		if ok, _, since := r.MatchesConditions(n); ok {
			queue = append(queue, waiting{n.Name, since})
		}
	}
	slices.SortFunc(queue, func(a, b waiting) int {
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	ahead := slices.IndexFunc(queue, func(w waiting) bool { return w.name == node.Name })
	if ahead < 0 {
		ahead = len(queue)
	}
	budget := r.Budget(selected)
	return BudgetUse{Allowed: used+ahead < budget, Used: used, Budget: budget}
}

// ApplyCondition makes the decision's write on n (a copy of the node about to be written)
// if a decision made again on n still asks for it. After a conflict n is a fresh read: the
// node's conditions or labels may have changed since the decision, and a taint decided on a
// match must not go onto a node that no longer matches, nor a clear take the taint off one
// that matches again. It returns the decision made on n, and whether it wrote.
func (r *Rule) ApplyCondition(d ConditionDecision, n *corev1.Node, now time.Time) (ConditionDecision, bool) {
	fresh := DecideCondition(r, n)
	switch {
	case d.Taint && fresh.Taint:
		r.AddConditionTaint(n, now)
	case d.Clear && fresh.Clear:
		r.ClearConditionTaint(n)
	default:
		return fresh, false
	}
	return fresh, true
}

// AddConditionTaint puts the rule's taint on and marks the node as tainted by the rule (its
// annotation, the time). A NoExecute taint carries timeAdded, as the taint-eviction
// controller reads it for tolerationSeconds.
func (r *Rule) AddConditionTaint(n *corev1.Node, now time.Time) {
	if !r.HasTaint(n) {
		t := r.Taint
		if t.Effect == corev1.TaintEffectNoExecute {
			at := metaTime(now)
			t.TimeAdded = &at
		}
		n.Spec.Taints = append(n.Spec.Taints, t)
	}
	r.mark(n, now)
	if r.PlacedAnnotation != "" {
		// The gate's mark, as on every taint it places: a rule removed, or given a new
		// taint, leaves an orphan the gate knows and lifts.
		setAnnotation(n, r.PlacedAnnotation, r.PlacedValue())
	}
}

// ClearConditionTaint takes off the rule's taint and its mark.
func (r *Rule) ClearConditionTaint(n *corev1.Node) {
	r.RemoveTaint(n)
	delete(n.Annotations, r.CompletedAnnotation)
}

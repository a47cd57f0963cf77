package rule

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Orphan is a taint the gate placed for a rule it no longer runs as it was: the rule was
// removed, renamed and no rule of the new name selects the node, its key changed, or it
// became a dry run. No rule will ever lift it, so the gate does, after its grace period.
type Orphan struct {
	// Rule is the name the mark gives, the rule that placed the taint.
	Rule string
	// Taint is the placed taint (key and effect).
	Taint corev1.Taint
}

// Orphans are the node's orphaned taints, in mark order, among the marks under
// placedAnnotation of this gate's instance: a mark counts only while the node carries its
// taint, and a taint one of the owning rules owns (of its name, or of its key on a node it
// selects, as after a rename; any taint it placed, if suspended) is that rule's to decide,
// whatever the mark says. The owning rules are those that write, and the suspended ones
// (config.Orphans). It is the one place that says what an orphan is, for the controller
// and the explorer alike.
func Orphans(owning []*Rule, node *corev1.Node, placedAnnotation, instance string) []Orphan {
	prefix := placedAnnotation + "."
	var out []Orphan
	for _, k := range slices.Sorted(maps.Keys(node.Annotations)) {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		t, in, ok := ParsePlaced(node.Annotations[k])
		if !ok || in != instance || !carries(node, t) || owned(owning, name, t, node) {
			continue
		}
		out = append(out, Orphan{Rule: name, Taint: t})
	}
	return out
}

// owned reports whether one of the rules owns taint t on the node, placed under name. A
// suspended rule owns every taint it placed, under any key: it writes nothing until resumed,
// and lifting its old key's taint would release a node it still holds.
func owned(rules []*Rule, name string, t corev1.Taint, node *corev1.Node) bool {
	for _, r := range rules {
		if r.Suspend && r.Name == name {
			return true
		}
		if r.Taint.Key == t.Key && r.Taint.Effect == t.Effect && (r.Name == name || r.Matches(node)) {
			return true
		}
	}
	return false
}

func carries(node *corev1.Node, t corev1.Taint) bool {
	for _, x := range node.Spec.Taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// LiftOrphan removes orphan o's taint and marks from the node and puts on the taint of the
// admitting rule that placed it, if it runs on under the same name and selects the node: a
// node held by a rule whose key changed stays held under the new key, a re-gated one too
// (which admission, skipping a rule that completed, would not taint again). The caller
// checks that o is still an orphan of the node, and adds what admission adds now.
//
// A re-gate's taint lifted as an orphan with no rule of its name to hold the node on (the
// rule renamed since) ends that re-gate: its mark, under completed (the completion
// annotation the rules derive theirs from), goes too, so that a rule of that name back
// decides the reboot again from its own record rather than take the taint for one an
// operator removed.
func LiftOrphan(admitting []*Rule, n *corev1.Node, o Orphan, placedAnnotation, instance, completed string) {
	Lift(n, o.Taint, placedAnnotation+".", PlacedValue(o.Taint, instance))
	for _, r := range admitting {
		if r.Name == o.Rule && r.Matches(n) {
			r.place(n)
			return
		}
	}
	if completed != "" {
		delete(n.Annotations, CompletionOf(completed, o.Rule)+regatedSuffix)
	}
}

// CompletionOf is the completion annotation a rule of that name gets by default from the
// config's, base: base for the rule named "default" (the contract's annotation), else
// base.<name>.
func CompletionOf(base, name string) string {
	if name == "default" {
		return base
	}
	return base + "." + name
}

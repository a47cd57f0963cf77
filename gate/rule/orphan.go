package rule

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Orphan is a taint the gate placed that no rule of the config owns: its rule was removed,
// its taint changed (key or effect), or it became a dry run. No rule will ever lift it, so
// the gate does, after its grace period.
type Orphan struct {
	// Record is the name the mark gives: the record of the taint (RecordName), or, on a
	// node an earlier release marked, the name of the rule that placed it.
	Record string
	// Taint is the placed taint (key and effect).
	Taint corev1.Taint
}

// Orphans are the node's orphaned taints, in mark order, among the marks under
// placedAnnotation of this gate's instance: a mark counts only while the node carries its
// taint, and a taint one of the owning rules has (the same key and effect) is that rule's to
// decide, whatever the mark says. The owning rules are those that write, and the suspended
// ones (config.Orphans). It is the one place that says what an orphan is, for the
// controller and the explorer alike.
func Orphans(owning []*Rule, node *corev1.Node, placedAnnotation, instance string) []Orphan {
	prefix := placedAnnotation + "."
	var out []Orphan
	for _, k := range slices.Sorted(maps.Keys(node.Annotations)) {
		record, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		t, in, ok := ParsePlaced(node.Annotations[k])
		if !ok || in != instance || !carries(node, t) || slices.ContainsFunc(owning, func(r *Rule) bool { return sameTaint(r.Taint, t) }) {
			continue
		}
		out = append(out, Orphan{Record: record, Taint: t})
	}
	return out
}

func carries(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return sameTaint(x, t) })
}

// LiftOrphan removes orphan o's taint and marks from the node, and ends the re-gate its
// record kept (under completed, the completion annotation the records derive theirs from):
// the taint off, that record holds nothing, and a rule given the taint again decides the
// node from its own record rather than take the re-gate for one an operator removed. The
// caller checks that o is still an orphan of the node, and adds what admission adds now.
func LiftOrphan(n *corev1.Node, o Orphan, placedAnnotation, instance, completed string) {
	Lift(n, o.Taint, placedAnnotation+".", PlacedValue(o.Taint, instance))
	if completed != "" {
		delete(n.Annotations, CompletionOf(completed, o.Record)+regatedSuffix)
	}
}

// CompletionOf is the completion annotation of a record, derived from the config's, base:
// base for the default record (the contract's annotation), else base.<record>.
func CompletionOf(base, record string) string {
	if record == DefaultRecord {
		return base
	}
	return base + "." + record
}

package rule

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Write is the one Node write a decision asks for.
type Write string

// The writes. Each is one guarded write of the node; Apply makes it.
const (
	// WriteNone: nothing to write.
	WriteNone Write = ""
	// WriteRelease removes the rule's taint and its mark, records the first completion and
	// ends a re-gate; a rule that gates reboots records the boot and the readiness it
	// released on.
	WriteRelease Write = "release"
	// WriteTaint puts a continuous rule's taint back, marked.
	WriteTaint Write = "taint"
	// WriteRemove removes the rule's taint and its mark, and ends a re-gate, recording no
	// completion (the node left the selector; the rule no longer gates reboots).
	WriteRemove Write = "remove"
	// WriteRegate puts the taint back on a rebooted node, marked, with the time of the
	// re-gate and the boot it waits for.
	WriteRegate Write = "regate"
	// WriteRecord records the node's boot and the readiness ready on it, and ends a re-gate
	// whose taint is gone.
	WriteRecord Write = "record"
	// WriteJoin puts the rule's taint on, marked, on a node another rule holds: the rule
	// holds it too, as if it had tainted it at creation.
	WriteJoin Write = "join"
	// WriteAdopt records a node in service as released by the rule: the completion and, for
	// a rule that gates reboots, the boot and the readiness, as a release records them; no
	// taint comes off.
	WriteAdopt Write = "adopt"
	// WriteStale adds the readiness ready now to the record, as readiness that does not
	// count on the boot the node runs: a re-gate then waits for that boot, and a first
	// hold records it.
	WriteStale Write = "stale"
	// WriteReplace marks a timed-out node as one the rule is replacing (ReplacedAnnotation),
	// before its NodeClaim is deleted; the taint stays.
	WriteReplace Write = "replace"
)

// Apply makes the decision's write on n (a copy of the node about to be written). It is
// idempotent, and it re-checks what the decision rested on, since after a conflict it runs
// on a fresh copy of the node: a write of a rule that gates reboots, decided on one boot,
// is not made on another. A release decided on readiness of an earlier boot records that
// readiness instead, as not counting on the boot the node runs now. It reports whether it
// wrote what the decision asked (false: the node changed under it; the next event decides
// again). A write that puts the taint on, or acts on the node as the rule's, is not made on
// a node the rule no longer selects; a removal decided because the node left the selector
// is not made on one that is back in it (its taint is its hold).
func (r *Rule) Apply(d Decision, n *corev1.Node, now time.Time) bool {
	if d.Write.needsSelector() && !r.Matches(n) || d.State == StateLeft && r.Matches(n) {
		return false
	}
	if r.GatesReboots() && d.Write != WriteNone && d.Write != WriteRemove && n.Status.NodeInfo.BootID != d.Boot {
		if d.Write == WriteRelease && n.Status.NodeInfo.BootID != "" {
			r.stale(n, d.Prints)
		}
		return false
	}
	switch d.Write {
	case WriteRelease:
		first := !r.Completed(n)
		r.RemoveTaint(n)
		r.mark(n, now)
		r.markUnwarmed(n, first && !d.Met)
		delete(n.Annotations, r.RegatedAnnotation())
		delete(n.Annotations, r.ReplacedAnnotation())
		if r.GatesReboots() && d.Boot != "" {
			setAnnotation(n, r.BootAnnotation(), d.Boot)
			r.setEvidence(n, d.Prints)
		}
	case WriteTaint:
		if !r.HasTaint(n) {
			r.place(n)
		}
	case WriteJoin, WriteAdopt:
		return r.join(d, n, now)
	case WriteRemove:
		r.RemoveTaint(n)
		delete(n.Annotations, r.RegatedAnnotation())
		delete(n.Annotations, r.ReplacedAnnotation())
	case WriteRegate:
		// On a fresh copy the node may be re-gated already (this gate's own write, which the
		// decision's copy did not show yet), or released since on this boot: no write then.
		if _, marked := n.Annotations[r.RegatedAnnotation()]; !r.Completed(n) || marked || !r.BootOf(n).Rebooted() {
			return false
		}
		if r.Evidence(n) == nil {
			// Released before evidence was recorded: what is ready now is the old boot's.
			r.setEvidence(n, d.Prints)
		}
		r.place(n)
		setAnnotation(n, r.RegatedAnnotation(), regatedValue(now, d.Boot))
	case WriteRecord:
		if r.HasTaint(n) {
			return false
		}
		if _, recorded := n.Annotations[r.BootAnnotation()]; d.State == StateBootUnrecorded && !recorded {
			// Released before the rule gated reboots (onReboot was ignore when it adopted
			// the node): what other records hold counts.
			r.adoptRecord(n, d)
		} else {
			setAnnotation(n, r.BootAnnotation(), d.Boot)
			r.setEvidence(n, d.Prints)
		}
		delete(n.Annotations, r.RegatedAnnotation())
	case WriteStale:
		r.stale(n, d.Prints)
	case WriteReplace:
		return r.markReplaced(n, now)
	}
	return true
}

// needsSelector reports whether the write rests on the rule selecting the node: it puts the
// taint on, adopts the node or replaces it. A release or a record does not: each takes a
// taint off or notes what happened. A removal for leaving the selector rests on the
// opposite, which Apply checks by its state.
func (w Write) needsSelector() bool {
	switch w {
	case WriteTaint, WriteRegate, WriteJoin, WriteAdopt, WriteReplace:
		return true
	}
	return false
}

// join makes a rule that came after the node's creation the node's: onto another rule's
// hold (WriteJoin), or, on a node in service, as a release recorded (WriteAdopt). On a fresh
// copy after a conflict, the node may have gone from one to the other: no write then.
func (r *Rule) join(d Decision, n *corev1.Node, now time.Time) bool {
	if r.HasTaint(n) || r.Completed(n) || r.inService(n) != (d.Write == WriteAdopt) {
		return false
	}
	if d.Write == WriteJoin {
		if !r.heldByPeer(n) {
			return false
		}
		r.place(n)
		return true
	}
	r.markUnwarmed(n, !r.Completed(n))
	r.mark(n, now)
	if d.Boot != "" {
		// A rule that ignores reboots keeps the boot too: it may gate them later, and the
		// records it takes this from go now.
		r.adoptRecord(n, d)
	}
	r.dropUnowned(n)
	return true
}

// adoptRecord records the boot and readiness of a node in service that the rule adopts: the
// boot it runs and the readiness ready now, with what the other records hold. When one was
// made on another boot, the node rebooted since: the record is that one's, boot and
// readiness, so that the rule sees the reboot next and re-gates the node unless its warm-up
// has run again.
func (r *Rule) adoptRecord(n *corev1.Node, d Decision) {
	boot, prints := d.Boot, slices.Clone(d.Prints)
	others := r.otherRecords(n)
	for _, f := range others {
		prints = append(prints, f.evidence...)
	}
	if i := slices.IndexFunc(others, func(f record) bool { return f.boot != d.Boot }); i >= 0 {
		boot, prints = others[i].boot, prints[len(d.Prints):]
	}
	setAnnotation(n, r.BootAnnotation(), boot)
	r.setEvidence(n, prints)
}

// record is what a rule recorded when it released a node: the boot, and the readiness.
type record struct {
	boot     string
	evidence []string
}

// otherRecords are the records the gate keeps on the node for other taints.
func (r *Rule) otherRecords(n *corev1.Node) []record {
	var out []record
	for _, k := range slices.Sorted(maps.Keys(n.Annotations)) {
		done, isBoot := strings.CutSuffix(k, bootSuffix)
		if !isBoot || k == r.BootAnnotation() || !completionOf(done, r.ReleasedAnnotation) {
			continue
		}
		out = append(out, record{boot: n.Annotations[k], evidence: fingerprints(n.Annotations[done+evidenceSuffix])})
	}
	return out
}

// stale records prints as readiness that does not count on the boot the node runs now: a
// re-gate waits for that boot from now on (its time kept), and a node not released yet
// records it as the record's boot.
func (r *Rule) stale(n *corev1.Node, prints []string) {
	boot := n.Status.NodeInfo.BootID
	if b := r.BootOf(n); !b.RegatedAt.IsZero() {
		setAnnotation(n, r.RegatedAnnotation(), regatedValue(b.RegatedAt, boot))
	} else {
		setAnnotation(n, r.BootAnnotation(), boot)
	}
	r.addEvidence(n, prints)
}

// formatUnix is how the gate writes a moment into an annotation: unix seconds.
func formatUnix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

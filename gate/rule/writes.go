package rule

import (
	"strconv"
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
	// WriteStale adds the readiness ready now to the record, as readiness that does not
	// count on the boot the node runs: a re-gate then waits for that boot, and a first
	// hold records it.
	WriteStale Write = "stale"
)

// Apply makes the decision's write on n (a copy of the node about to be written). It is
// idempotent, and it re-checks what the decision rested on, since after a conflict it runs
// on a fresh copy of the node: a write of a rule that gates reboots, decided on one boot,
// is not made on another. A release decided on readiness of an earlier boot records that
// readiness instead, as not counting on the boot the node runs now. It reports whether it
// wrote what the decision asked (false: the node changed under it; the next event decides
// again).
func (r *Rule) Apply(d Decision, n *corev1.Node, now time.Time) bool {
	if r.GatesReboots() && d.Write != WriteNone && d.Write != WriteRemove && n.Status.NodeInfo.BootID != d.Boot {
		if d.Write == WriteRelease && n.Status.NodeInfo.BootID != "" {
			r.stale(n, d.Prints)
		}
		return false
	}
	switch d.Write {
	case WriteRelease:
		r.RemoveTaint(n)
		r.mark(n, now)
		delete(n.Annotations, r.RegatedAnnotation())
		if r.GatesReboots() && d.Boot != "" {
			setAnnotation(n, r.BootAnnotation(), d.Boot)
			r.setEvidence(n, d.Prints)
		}
	case WriteTaint:
		if !r.HasTaint(n) {
			r.place(n)
		}
	case WriteRemove:
		r.RemoveTaint(n)
		delete(n.Annotations, r.RegatedAnnotation())
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
		setAnnotation(n, r.BootAnnotation(), d.Boot)
		r.setEvidence(n, d.Prints)
		delete(n.Annotations, r.RegatedAnnotation())
	case WriteStale:
		r.stale(n, d.Prints)
	}
	return true
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

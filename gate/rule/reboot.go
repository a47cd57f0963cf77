package rule

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A startup rule with onReboot: gate keeps three more annotations beside its completion
// annotation, suffixed with '_', which no rule name holds, so they never collide with
// another rule's keys:
//   - <completion>_bootID: the boot its record is about: the boot it last released the
//     node on;
//   - <completion>_readiness: the readiness evidence recorded with that boot (evidence.go),
//     readiness that does not count on a later boot;
//   - <completion>_regatedAt: "<unix second>,<boot ID>": when, on the gate's clock, the rule
//     put its taint back after a reboot, and the boot it waits for; written in that
//     re-taint write and removed by the next release. It marks the taint as the rule's own
//     re-gate, starts maxHold's count, and keeps the released boot's record as it was, so
//     that a re-gate dropped (onReboot switched to ignore) leaves the node released on the
//     boot it was released on.
const (
	bootSuffix     = "_bootID"
	evidenceSuffix = "_readiness"
	regatedSuffix  = "_regatedAt"
)

// GatesReboots reports whether the rule holds a released node again after it reboots.
func (r *Rule) GatesReboots() bool { return r.Mode == Startup && r.OnReboot == RebootGate }

// BootAnnotation is the annotation holding the boot ID the rule's record is about.
func (r *Rule) BootAnnotation() string { return r.CompletedAnnotation + bootSuffix }

// RegatedAnnotation is the annotation holding when the rule re-gated the node.
func (r *Rule) RegatedAnnotation() string { return r.CompletedAnnotation + regatedSuffix }

// Boot is where a node stands with respect to reboots, for a rule that gates them.
type Boot struct {
	// Recorded is the boot ID of the rule's record ("" if none): the boot it released the
	// node on, or the one a re-gate waits for.
	Recorded string
	// Current is the boot ID the kubelet reports now ("" if it reports none).
	Current string
	// RegatedAt is when the rule put its taint back after a reboot (zero: it has not, or
	// the node has been released since), and Awaited the boot that re-gate waits for (""
	// when not recorded, as by an older gate).
	RegatedAt time.Time
	Awaited   string
}

// BootOf reads the node's boot state for the rule.
func (r *Rule) BootOf(n *corev1.Node) Boot { return bootUnder(n, r.CompletedAnnotation) }

// bootUnder reads the boot records kept beside the completion annotation done.
func bootUnder(n *corev1.Node, done string) Boot {
	b := Boot{Recorded: n.Annotations[done+bootSuffix], Current: n.Status.NodeInfo.BootID}
	at, awaited, _ := strings.Cut(n.Annotations[done+regatedSuffix], ",")
	if s, err := strconv.ParseInt(at, 10, 64); err == nil {
		b.RegatedAt, b.Awaited = time.Unix(s, 0), awaited
	}
	return b
}

// RebootedAgain reports whether a re-gated node runs a boot other than the one its re-gate
// waits for.
func (b Boot) RebootedAgain() bool {
	return b.Awaited != "" && b.Current != "" && b.Current != b.Awaited
}

// regatedValue is the re-gate annotation's value.
func regatedValue(now time.Time, boot string) string { return formatUnix(now) + "," + boot }

// Rebooted reports whether the node runs on a boot other than the recorded one. A kubelet
// restart keeps the boot ID, so it is not a reboot.
func (b Boot) Rebooted() bool {
	return b.Recorded != "" && b.Current != "" && b.Current != b.Recorded
}

// Regated reports whether the rule holds the node again after a reboot: it put its taint
// back, and the taint is still there.
func (r *Rule) Regated(n *corev1.Node) bool {
	return r.GatesReboots() && r.regateMarked(n)
}

// regateMarked: the node carries the rule's re-gate mark and its taint, whether or not the
// rule still gates reboots.
func (r *Rule) regateMarked(n *corev1.Node) bool {
	_, marked := n.Annotations[r.RegatedAnnotation()]
	return marked && r.Completed(n) && r.HasTaint(n)
}

func setAnnotation(n *corev1.Node, key, value string) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[key] = value
}

package rule

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A startup rule with onReboot: gate keeps two more annotations beside its completion
// annotation, suffixed with '_', which no rule name holds, so they never collide with
// another rule's keys:
//   - <completion>_bootID: the boot the rule last released the node on, written in the
//     release write itself;
//   - <completion>_regatedAt: the unix second at which the rule put its taint back after a
//     reboot, written in that re-taint write and removed by the next release.
const (
	bootSuffix    = "_bootID"
	regatedSuffix = "_regatedAt"
)

// GatesReboots reports whether the rule holds a released node again after it reboots.
func (r *Rule) GatesReboots() bool { return r.Mode == Startup && r.OnReboot == RebootGate }

// BootAnnotation is the annotation holding the boot ID the rule released the node on.
func (r *Rule) BootAnnotation() string { return r.CompletedAnnotation + bootSuffix }

// RegatedAnnotation is the annotation holding when the rule re-gated the node.
func (r *Rule) RegatedAnnotation() string { return r.CompletedAnnotation + regatedSuffix }

// Boot is where a node stands with respect to reboots, for a rule that gates them.
type Boot struct {
	// Released is the boot ID the rule last released the node on ("" if not recorded).
	Released string
	// Current is the boot ID the kubelet reports now ("" if it reports none).
	Current string
	// RegatedAt is when the rule put its taint back after a reboot (zero: it has not, or
	// the node has been released since).
	RegatedAt time.Time
}

// BootOf reads the node's boot state for the rule.
func (r *Rule) BootOf(n *corev1.Node) Boot {
	b := Boot{Released: n.Annotations[r.BootAnnotation()], Current: n.Status.NodeInfo.BootID}
	if s, err := strconv.ParseInt(n.Annotations[r.RegatedAnnotation()], 10, 64); err == nil {
		b.RegatedAt = time.Unix(s, 0)
	}
	return b
}

// Rebooted reports whether the node runs on a boot other than the one it was released on.
// A kubelet restart keeps the boot ID, so it is not a reboot.
func (b Boot) Rebooted() bool {
	return b.Released != "" && b.Current != "" && b.Current != b.Released
}

// Regated reports whether the rule holds the node again after a reboot: it put its taint
// back, and the taint is still there.
func (r *Rule) Regated(n *corev1.Node) bool {
	return r.GatesReboots() && r.Completed(n) && r.HasTaint(n) && !r.BootOf(n).RegatedAt.IsZero()
}

// Regate is the re-taint write after a reboot: the rule's taint and the time it came back.
// (AddTaint never taints a node a startup rule has released; this is the one exception.)
func (r *Rule) Regate(n *corev1.Node, now time.Time) {
	if !r.HasTaint(n) {
		n.Spec.Taints = append(n.Spec.Taints, r.Taint)
	}
	setAnnotation(n, r.RegatedAnnotation(), strconv.FormatInt(now.Unix(), 10))
}

// RecordBoot notes the boot the node runs on as the one the rule released it on, and ends
// a re-gate: part of every release by a rule that gates reboots, and alone for a node
// released before the rule gated reboots, or whose re-gate taint an operator removed.
func (r *Rule) RecordBoot(n *corev1.Node) {
	if !r.GatesReboots() {
		return
	}
	if id := n.Status.NodeInfo.BootID; id != "" {
		setAnnotation(n, r.BootAnnotation(), id)
	}
	delete(n.Annotations, r.RegatedAnnotation())
}

func setAnnotation(n *corev1.Node, key, value string) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[key] = value
}

// afterReboot is the decision of a rule that gates reboots, once it has released the node.
//
// Readiness evidence postdates the reboot when a component's Pod turned Ready after the
// second the rule put its taint back (the kubelet reports the new boot ID as soon as it
// starts, before it restarts the Pods, so the re-gate comes first). A Pod Ready since
// before, and the early-ready annotation, which a Pod keeps across a reboot, never count:
// they are the stale init Pod of this node's previous boot, as a Pod older than the node is
// for a re-registered node. Node conditions count as they stand. If the rule saw the reboot
// late, after the Pods were Ready again, nothing fresh will come: the node is held until
// maxHold, counted from the re-gate, and then the timeout policy applies.
func (r *Rule) afterReboot(rd Readiness, in Input) Decision {
	b := r.BootOf(in.Node)
	switch {
	case !b.RegatedAt.IsZero() && !r.HasTaint(in.Node):
		return Decision{RecordBoot: true, Reason: "the re-gate's taint was removed by hand: recording the current boot"}
	case !b.RegatedAt.IsZero():
		return r.decideRegated(rd, in, b)
	case b.Released == "" && b.Current != "":
		return Decision{RecordBoot: true, Reason: "recording the boot the node was released on"}
	case b.Rebooted():
		return Decision{Regate: true, Reason: fmt.Sprintf("rebooted: boot %s, released on boot %s", b.Current, b.Released)}
	}
	return Decision{Met: true, Reason: "released"}
}

// decideRegated waits for readiness that postdates the re-gate, within maxHold from it. The
// re-gate has whole seconds, as a Pod's Ready transition has: one in the re-gate's own
// second does not count, since a Pod Ready from before the reboot, whose unready write the
// gate has not seen yet, can share it. A Pod ready again within that second is held
// until its next transition or maxHold; a real reboot's warm-up takes longer.
func (r *Rule) decideRegated(rd Readiness, in Input, b Boot) Decision {
	fresh := in
	fresh.ReadyAfter = b.RegatedAt
	met, readyAt, why, _ := r.requirements(rd, fresh)
	if met {
		return Decision{Release: true, Met: true, ReadyAt: readyAt,
			Reason: fmt.Sprintf("ready again after the reboot to boot %s", b.Current)}
	}
	why = fmt.Sprintf("waiting for boot %s: %s", b.Current, why)
	if r.MaxHold.Duration <= 0 {
		return Decision{Reason: why}
	}
	if deadline := b.RegatedAt.Add(r.MaxHold.Duration); in.Now.Before(deadline) {
		return Decision{Reason: why, RequeueAfter: deadline.Sub(in.Now)}
	}
	reason := fmt.Sprintf("maximum hold %s after the re-gate reached: %s", r.MaxHold.Duration, why)
	if r.TimeoutPolicy == TimeoutRelease {
		return Decision{Release: true, TimedOut: true, Reason: reason}
	}
	return Decision{TimedOut: true, Reason: reason}
}

package gate

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Decision is the outcome of Decide for one gated node.
type Decision struct {
	// Release: remove the taint now.
	Release bool
	// TimedOut: MaxHold passed before the node was ready. With TimeoutRelease, Release is
	// also true; with TimeoutKeep the taint stays.
	TimedOut bool
	// Reason says why, in words fit for an event or a log line.
	Reason string
	// RequeueAfter > 0: nothing will change before this much time passes (min or max hold),
	// so decide again then. Zero: wait for the next watch event.
	RequeueAfter time.Duration
	// ReadyAt is when the node became ready (the latest Ready transition of the Pods that
	// made it so), for the ready-to-release latency metric. Zero if not known.
	ReadyAt time.Time
}

// Wait reports whether the node keeps its taint.
func (d Decision) Wait() bool { return !d.Release }

// Decide says whether a gated node may be released. It is pure: the answer depends only on
// its arguments, so every rule is table-tested.
//
// pods may hold any Pods; only those of a required component, on this node, not
// terminating and created at or after the node count. The creation rule matters: when an
// autoscaler reuses a node name, a Ready init Pod of the previous node can still be bound to
// that name until pod GC runs, and it must never release the new node.
func Decide(node *corev1.Node, pods []*corev1.Pod, now time.Time, cfg *Config) Decision {
	return DecideExpecting(node, pods, nil, now, cfg)
}

// DecideExpecting is Decide, also told which components are expected on the node although
// none of their Pods is there yet: a DaemonSet of theirs targets it (expected[name]). Such a
// component holds the node like a Pod that is not ready, so that a node is never released
// while one component's DaemonSet has yet to create or bind its Pod.
func DecideExpecting(node *corev1.Node, pods []*corev1.Pod, expected map[string]bool, now time.Time, cfg *Config) Decision {
	r := cfg.rules()
	created := node.CreationTimestamp.Time

	ready, readyAt, why := componentsReady(node, pods, expected, cfg, r)
	if ready && r.condType != "" && !hasCondition(node, r.condType, r.condStatus) {
		ready, why = false, fmt.Sprintf("node condition %s is not %s", r.condType, r.condStatus)
	}

	if ready {
		if minEnd := created.Add(cfg.MinHold.Duration); now.Before(minEnd) {
			return Decision{Reason: "minimum hold not reached", RequeueAfter: minEnd.Sub(now), ReadyAt: readyAt}
		}
		return Decision{Release: true, Reason: "all required components ready", ReadyAt: readyAt}
	}

	deadline := cfg.maxHoldDeadline(created)
	if deadline.IsZero() {
		return Decision{Reason: why}
	}
	if now.Before(deadline) {
		return Decision{Reason: why, RequeueAfter: deadline.Sub(now)}
	}
	reason := fmt.Sprintf("maximum hold %s reached: %s", cfg.MaxHold.Duration, why)
	if cfg.TimeoutPolicy == TimeoutRelease {
		return Decision{Release: true, TimedOut: true, Reason: reason}
	}
	return Decision{TimedOut: true, Reason: reason}
}

// componentsReady applies the component rules: at least one component has a counted Pod on
// the node, and every component that has one has a ready one. It returns the latest ready
// time and, when not ready, why.
func componentsReady(node *corev1.Node, pods []*corev1.Pod, expected map[string]bool, cfg *Config, r *compiled) (bool, time.Time, string) {
	var latest time.Time
	present := 0
	for i := range r.components {
		comp := &r.components[i]
		has, readyPod := false, (*corev1.Pod)(nil)
		for _, p := range pods {
			if !counts(p, node, comp) {
				continue
			}
			has = true
			if podReady(p, cfg) {
				readyPod = p
				break
			}
		}
		if !has {
			if expected[comp.Name] {
				return false, time.Time{}, fmt.Sprintf("component %q: its DaemonSet targets the node, no Pod yet", comp.Name)
			}
			continue
		}
		present++
		if readyPod == nil {
			return false, time.Time{}, fmt.Sprintf("component %q not ready", comp.Name)
		}
		if t := readySince(readyPod); t.After(latest) {
			latest = t
		}
	}
	if present == 0 {
		return false, time.Time{}, "no init pod on the node yet"
	}
	return true, latest, ""
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
func podReady(p *corev1.Pod, cfg *Config) bool {
	if p.Annotations[cfg.ReadyAnnotation] == "true" {
		return true
	}
	if cfg.AnnotationOnly || !hasPodReady(p) {
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

func hasCondition(node *corev1.Node, t corev1.NodeConditionType, s corev1.ConditionStatus) bool {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return node.Status.Conditions[i].Status == s
		}
	}
	return false
}

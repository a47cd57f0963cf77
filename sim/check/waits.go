package check

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PendingToRunning is, for each workload Pod that runs, how long it waited from its
// creation to Running: the cost of gating as the workload sees it. Both ends are stored
// with one-second resolution.
func PendingToRunning(pods []corev1.Pod) []time.Duration {
	var out []time.Duration
	for i := range pods {
		p := &pods[i]
		if daemon(p) || p.Status.Phase != corev1.PodRunning || p.Status.StartTime == nil {
			continue
		}
		out = append(out, p.Status.StartTime.Sub(p.CreationTimestamp.Time))
	}
	return out
}

// daemon: a DaemonSet's Pod (an init Pod or an agent), not a workload's.
func daemon(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

package check

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPendingToRunning: a workload Pod that runs waited from its creation to its start; a
// DaemonSet's Pod and a Pod that does not run yet are not workload waits.
func TestPendingToRunning(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pod := func(wait time.Duration, phase corev1.PodPhase, owner string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}, Status: corev1.PodStatus{Phase: phase}}
		if phase == corev1.PodRunning {
			p.Status.StartTime = &metav1.Time{Time: t0.Add(wait)}
		}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x"}}
		}
		return p
	}
	pods := []corev1.Pod{
		pod(30*time.Second, corev1.PodRunning, "ReplicaSet"),
		pod(2*time.Second, corev1.PodRunning, "DaemonSet"),
		pod(0, corev1.PodPending, "ReplicaSet"),
		pod(5*time.Second, corev1.PodRunning, ""),
	}
	if got, want := PendingToRunning(pods), []time.Duration{30 * time.Second, 5 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

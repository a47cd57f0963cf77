package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestRecordsReboot: a boot ID other than the node's first is a reboot, seen at its first
// version; the taint back after it is the re-gate; the init Pod Ready again with its
// containers restarted is the re-initialisation, and a Pod Ready since before is not.
func TestRecordsReboot(t *testing.T) {
	cfg := validConfig(t)
	r := NewRecorder(cfg, nil, "ns", []scenario.InitDaemonSet{{Name: "init", Labels: map[string]string{"c": "init"}}})
	node := func(rv, boot string, tainted bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: rv,
			Annotations: map[string]string{cfg.EffectiveRules()[0].CompletedAnnotation: "1"}}}
		n.Status.NodeInfo.BootID = boot
		if tainted {
			n.Spec.Taints = []corev1.Taint{cfg.EffectiveRules()[0].Taint}
		}
		return n
	}
	restarted := func(p *corev1.Pod, n int32) *corev1.Pod {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
		return p
	}
	r.node(nil, node("1", "", true))
	r.node(nil, node("2", "a", true)) // the first boot ID: no reboot
	r.pod(initPod("init", "3", true))
	r.node(nil, node("4", "a", false))
	if got := r.Snapshot()[0].Reboots; len(got) != 0 {
		t.Fatalf("reboots %+v before any, want none", got)
	}
	r.node(nil, node("5", "b", false))
	r.pod(restarted(initPod("init", "6", true), 0)) // Ready since before the reboot
	r.node(nil, node("7", "b", true))
	rb := r.Snapshot()[0].Reboots
	if len(rb) != 1 || rb[0].BootID != "b" || rb[0].Seen.RV != 5 || rb[0].Regated.RV != 7 || !rb[0].Reinit.IsZero() {
		t.Fatalf("reboots %+v, want boot b seen at rv 5, re-gated at 7, not re-initialised", rb)
	}
	r.pod(restarted(initPod("init", "8", true), 1)) // restarted and Ready: its unready write coalesced away
	if got := r.Snapshot()[0].Reboots[0].Reinit.RV; got != 8 {
		t.Errorf("re-initialised at rv %d, want 8", got)
	}
}

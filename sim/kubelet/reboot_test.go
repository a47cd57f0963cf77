package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestBootIDIsSeeded: a node reports one boot ID per boot, the same for the same seed.
func TestBootIDIsSeeded(t *testing.T) {
	if a, b := BootID(1, "n0", 0), BootID(1, "n0", 0); a != b {
		t.Error("same seed, node and boot: different boot IDs")
	}
	seen := map[string]bool{}
	for _, id := range []string{BootID(1, "n0", 0), BootID(1, "n0", 1), BootID(1, "n1", 0), BootID(2, "n0", 0)} {
		if seen[id] || len(id) != 36 {
			t.Errorf("boot ID %q repeats or is no UUID", id)
		}
		seen[id] = true
	}
}

// TestReboot: the node reports a new boot ID first; then its init Pod turns unready with
// its containers restarted, and Ready again after its timeline; the workload Pod is left
// alone.
func TestReboot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	init := scenario.InitDaemonSet{Name: "init", Labels: map[string]string{"c": "init"}, Ready: scenario.PodTimeline{Mode: scenario.ModeReady, After: 100 * time.Millisecond}}
	k := &Kubelet{Client: client, Namespace: "ns", Scenario: "s", Seed: 3, Init: []scenario.InitDaemonSet{init}}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Register(ctx, "n0", nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "init", Namespace: "ns", UID: "u1", Labels: init.Labels}, Spec: corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "c"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u2"}, Spec: corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "c"}}}},
	} {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(name string) (bool, int32) {
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, -1
		}
		return p.Status.ContainerStatuses[0].Ready, p.Status.ContainerStatuses[0].RestartCount
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	bootOf := func() string {
		n, _ := client.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
		return n.Status.NodeInfo.BootID
	}
	waitFor("the first boot ID and both Pods ready", func() bool {
		r1, _ := ready("init")
		r2, _ := ready("web")
		return r1 && r2 && bootOf() == BootID(3, "n0", 0)
	})
	client.ClearActions()
	n, err := k.Reboot([]string{"n0"})
	if err != nil || n != 1 {
		t.Fatalf("Reboot: %d init Pods, %v; want 1, nil", n, err)
	}
	if bootOf() != BootID(3, "n0", 1) {
		t.Fatalf("boot ID after the reboot %q, want the second boot's", bootOf())
	}
	if r, restarts := ready("init"); r || restarts != 1 {
		t.Errorf("init Pod right after the reboot: ready %v, %d restarts; want unready, 1", r, restarts)
	}
	var order []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			order = append(order, a.GetResource().Resource+"/"+a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName())
		}
	}
	if len(order) < 2 || order[0] != "nodes/n0" || order[1] != "pods/init" {
		t.Errorf("status writes %v: want the node's boot ID first, then the init Pod", order)
	}
	waitFor("the init Pod ready again", func() bool { r, restarts := ready("init"); return r && restarts == 1 })
	if r, restarts := ready("web"); !r || restarts != 0 {
		t.Errorf("workload Pod: ready %v, %d restarts; want it left running", r, restarts)
	}
	if _, err := k.Reboot([]string{"gone"}); err == nil {
		t.Error("rebooting a node with no kubelet: no error")
	}
}

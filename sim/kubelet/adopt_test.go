package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestAdopt: a kubelet that adopts KWOK nodes reports such a Node Ready with the capacity
// it was created with, renews its Lease, and runs its Pods, those bound before the node was
// seen as well as after; a Node the selector does not match is left alone; a deleted Node
// is forgotten.
func TestAdopt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	k := &Kubelet{Client: client, Namespace: "ns", Scenario: "s",
		Adopt: labels.SelectorFromSet(labels.Set{KWOKNodeLabel: "fake"})}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string) {
		t.Helper()
		// The fake client assigns no UIDs, and the kubelet knows a Pod by its UID.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Bound before its node is seen, as a DaemonSet Pod can be.
	pod("early", "kwok-a")
	pod("elsewhere", "other")
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "kwok-a", Labels: map[string]string{KWOKNodeLabel: "fake"}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Phase: corev1.NodePending}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(node string) bool {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	running := func(name string) bool {
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Status.Phase == corev1.PodRunning
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	eventually("adopted node Ready", func() bool { return ready("kwok-a") })
	eventually("Pod bound before adoption Running", func() bool { return running("early") })
	pod("late", "kwok-a")
	eventually("Pod bound after adoption Running", func() bool { return running("late") })

	n, err := client.CoreV1().Nodes().Get(ctx, "kwok-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Status.Capacity[corev1.ResourceCPU]; got.Cmp(resource.MustParse("16")) != 0 {
		t.Errorf("adopted node's CPU capacity %s, want the 16 it was created with", got.String())
	}
	if got := n.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("16")) != 0 {
		t.Errorf("adopted node's allocatable CPU %s, want the 16 it was created with", got.String())
	}
	l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "kwok-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("adopted node's Lease: %v", err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != "kwok-a" || l.Spec.RenewTime == nil {
		t.Errorf("adopted node's Lease %+v, want held by kwok-a and renewed", l.Spec)
	}

	if ready("other") || running("elsewhere") {
		t.Error("a node the selector does not match was adopted")
	}
	if _, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "other", metav1.GetOptions{}); err == nil {
		t.Error("a node the selector does not match got a Lease")
	}

	if err := client.CoreV1().Nodes().Delete(ctx, "kwok-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("deleted node forgotten", func() bool { return len(k.registered()) == 0 })
}

// TestAdoptOff: without Adopt, a kubelet leaves a KWOK node alone, as every scenario
// before adoption expects.
func TestAdoptOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	k := &Kubelet{Client: client, Namespace: "ns", Scenario: "s"}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-a", Labels: map[string]string{KWOKNodeLabel: "fake"}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := k.registered(); len(got) != 0 {
		t.Errorf("kubelet without Adopt took over %v", got)
	}
}

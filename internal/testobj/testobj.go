// Package testobj builds the Nodes and Pods that the gate's unit tests decide on: one
// vocabulary for the gate's and its rules' tests, so a case reads the same in both.
package testobj

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/startupgate/startupgate/gate/config"
)

// ValidConfig returns config.DefaultConfig, modified by mod, validated: a test's config
// fails the test, not the code under it, when it is wrong.
func ValidConfig(tb testing.TB, mod func(*config.Config)) *config.Config {
	tb.Helper()
	cfg := config.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("Validate() = %v, want nil", err)
	}
	return &cfg
}

// NodeOpt changes a Node that Node builds.
type NodeOpt func(*corev1.Node)

// Node returns a Node created at created, with the hostname and os labels a kubelet sets.
func Node(name string, created time.Time, opts ...NodeOpt) *corev1.Node {
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			UID:               types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(created),
			Labels:            map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Taints adds taints to the Node.
func Taints(ts ...corev1.Taint) NodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

// NodeLabel sets one label on the Node.
func NodeLabel(k, v string) NodeOpt {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

// NodeAnnotation sets one annotation on the Node.
func NodeAnnotation(k, v string) NodeOpt {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
}

// NodeCondition adds a condition to the Node.
func NodeCondition(t corev1.NodeConditionType, s corev1.ConditionStatus) NodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	}
}

// PodOpt changes a Pod that Pod builds.
type PodOpt func(*corev1.Pod)

// Pod returns an init Pod (default component label) in kube-system, bound to nodeName,
// with one container and no readiness at all.
func Pod(name, nodeName string, created time.Time, opts ...PodOpt) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "kube-system",
			UID:               types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(created),
			Labels:            map[string]string{"startup.k8s.io/component": "init"},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ReadyAt marks the Pod Ready since at, with every container ready.
func ReadyAt(at time.Time) PodOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
		})
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true})
		}
	}
}

// PodCondition adds a condition to the Pod, changed at at.
func PodCondition(t corev1.PodConditionType, s corev1.ConditionStatus, at time.Time) PodOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)})
	}
}

// ContainerStatuses replaces the Pod's container statuses, one per value, ready as given.
func ContainerStatuses(ready ...bool) PodOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		for i, r := range ready {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c" + string(rune('0'+i)), Ready: r})
		}
	}
}

// Containers replaces the Pod's containers with ones of these names.
func Containers(names ...string) PodOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "registry.k8s.io/pause:3.10"})
		}
	}
}

// Namespace moves the Pod to namespace ns.
func Namespace(ns string) PodOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

// Labels replaces the Pod's labels.
func Labels(l map[string]string) PodOpt { return func(p *corev1.Pod) { p.Labels = l } }

// PodAnnotation sets one annotation on the Pod.
func PodAnnotation(k, v string) PodOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// Terminating marks the Pod deleted at at, held by a finalizer.
func Terminating(at time.Time) PodOpt {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
		p.Finalizers = []string{"test/hold"}
	}
}

// Tolerations adds tolerations to the Pod.
func Tolerations(ts ...corev1.Toleration) PodOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

// OwnedByDaemonSet makes the Pod controlled by the named DaemonSet.
func OwnedByDaemonSet(name string) PodOpt {
	return func(p *corev1.Pod) {
		ctrl := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: types.UID(name + "-uid"), Controller: &ctrl,
		})
	}
}

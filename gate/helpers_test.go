package gate

import (
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// controller-runtime warns loudly when no logger was ever set; the tests do not read logs.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// t0 is the creation time of the node under test; every other time is relative to it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gateTaint is the default startup taint.
var gateTaint = corev1.Taint{Key: DefaultTaintKey, Value: DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}

// validConfig returns DefaultConfig, modified by mod, validated.
func validConfig(tb testing.TB, mod func(*Config)) *Config {
	tb.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("Validate() = %v, want nil", err)
	}
	return &cfg
}

type nodeOpt func(*corev1.Node)

func newNode(name string, created time.Time, opts ...nodeOpt) *corev1.Node {
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

func withTaints(ts ...corev1.Taint) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

func withNodeLabel(k, v string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

func withNodeAnnotation(k, v string) nodeOpt {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
}

func withNodeCondition(t corev1.NodeConditionType, s corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	}
}

type podOpt func(*corev1.Pod)

// newPod returns an init Pod (default component label) in kube-system, bound to nodeName,
// with one container and no readiness at all.
func newPod(name, nodeName string, created time.Time, opts ...podOpt) *corev1.Pod {
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

// readyAt marks the Pod Ready since at, with every container ready.
func readyAt(at time.Time) podOpt {
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

func withPodCondition(t corev1.PodConditionType, s corev1.ConditionStatus, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)})
	}
}

func withContainerStatuses(ready ...bool) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		for i, r := range ready {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c" + string(rune('0'+i)), Ready: r})
		}
	}
}

func withContainers(names ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "registry.k8s.io/pause:3.10"})
		}
	}
}

func withNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

func withLabels(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }

func withPodAnnotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func terminating(at time.Time) podOpt {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
		p.Finalizers = []string{"test/hold"}
	}
}

func withTolerations(ts ...corev1.Toleration) podOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

func ownedByDaemonSet(name string) podOpt {
	return func(p *corev1.Pod) {
		ctrl := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: types.UID(name + "-uid"), Controller: &ctrl,
		})
	}
}

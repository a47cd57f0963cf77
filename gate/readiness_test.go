package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	const nodeName = "node-a"
	// Default decision time: ten minutes after the node was created.
	now := t0.Add(10 * time.Minute)
	podReadyAt := t0.Add(2 * time.Minute)

	multi := func(c *Config) {
		c.Components = []Component{
			{Name: "cni", Namespace: "kube-system", Selector: "app=cni"},
			{Name: "agent", Namespace: "monitoring", Selector: "app=agent"},
		}
	}
	cniPod := func(name string, opts ...podOpt) *corev1.Pod {
		return newPod(name, nodeName, t0.Add(time.Second), append([]podOpt{withLabels(map[string]string{"app": "cni"})}, opts...)...)
	}
	agentPod := func(name string, opts ...podOpt) *corev1.Pod {
		return newPod(name, nodeName, t0.Add(time.Second),
			append([]podOpt{withLabels(map[string]string{"app": "agent"}), withNamespace("monitoring")}, opts...)...)
	}

	tests := []struct {
		name   string
		cfg    func(*Config)
		node   *corev1.Node
		pods   []*corev1.Pod
		now    time.Time // zero: now
		want   Decision
		reason string // substring of want.Reason
	}{
		// --- Which Pods count.
		{
			name:   "no pods at all",
			node:   newNode(nodeName, t0),
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "ready init pod on the node releases",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "ready init pod on another node is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", "node-b", t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "unscheduled ready init pod is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", "", t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "terminating ready init pod is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt), terminating(t0.Add(3*time.Minute)))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "ready init pod older than the node (previous node with the same name) is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-old", nodeName, t0.Add(-time.Second), readyAt(t0.Add(-time.Millisecond)))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name: "stale ready pod does not mask the new node's unready pod",
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{
				newPod("init-old", nodeName, t0.Add(-time.Hour), readyAt(t0.Add(-50*time.Minute))),
				newPod("init-new", nodeName, t0.Add(time.Second)),
			},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "init pod created at exactly the node's creation time counts",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0, readyAt(podReadyAt))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "pod without the component label is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("web-1", nodeName, t0.Add(time.Second), withLabels(map[string]string{"app": "web"}), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "pod with the component key but another value is ignored",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("x-1", nodeName, t0.Add(time.Second), withLabels(map[string]string{"startup.k8s.io/component": "other"}), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "default component matches in any namespace",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withNamespace("team-a"), readyAt(podReadyAt))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- When a Pod is ready.
		{
			name:   "Ready condition false",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withPodCondition(corev1.PodReady, corev1.ConditionFalse, podReadyAt), withContainerStatuses(true))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "no Ready condition, all containers ready",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withContainerStatuses(true))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true but one container not ready",
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withContainers("a", "b"),
				withPodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), withContainerStatuses(true, false))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true but fewer container statuses than containers",
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withContainers("a", "b"),
				withPodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), withContainerStatuses(true))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true and every one of several containers ready",
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withContainers("a", "b"),
				withPodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), withContainerStatuses(true, true))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "early-ready annotation on an unready pod releases",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withPodAnnotation(DefaultReadyAnnotation, "true"))},
			want:   Decision{Release: true},
			reason: "all required components ready",
		},
		{
			name:   "early-ready annotation with a value other than true does not count",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withPodAnnotation(DefaultReadyAnnotation, "yes"))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "early-ready annotation on a terminating pod does not count",
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withPodAnnotation(DefaultReadyAnnotation, "true"), terminating(t0.Add(time.Minute)))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name:   "custom ready annotation key",
			cfg:    func(c *Config) { c.ReadyAnnotation = "example.com/done" },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), withPodAnnotation("example.com/done", "true"))},
			want:   Decision{Release: true},
			reason: "all required components ready",
		},
		{
			name:   "annotationOnly: a fully ready pod without the annotation does not count",
			cfg:    func(c *Config) { c.AnnotationOnly = true },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "annotationOnly: the annotation releases",
			cfg:    func(c *Config) { c.AnnotationOnly = true },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt), withPodAnnotation(DefaultReadyAnnotation, "true"))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "one ready pod of a component is enough",
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{
				newPod("init-1", nodeName, t0.Add(time.Second)),
				newPod("init-2", nodeName, t0.Add(time.Second), readyAt(podReadyAt)),
			},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- Several components.
		{
			name:   "several components: both ready, ReadyAt is the later",
			cfg:    multi,
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", readyAt(t0.Add(3*time.Minute))), agentPod("agent-1", readyAt(t0.Add(90*time.Second)))},
			want:   Decision{Release: true, ReadyAt: t0.Add(3 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name:   "several components: one present and not ready holds",
			cfg:    multi,
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", readyAt(podReadyAt)), agentPod("agent-1")},
			want:   Decision{},
			reason: `component "agent" not ready`,
		},
		{
			name:   "several components: a component without a pod on the node is ignored",
			cfg:    multi,
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", readyAt(podReadyAt))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "several components: none has a pod",
			cfg:    multi,
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("web", nodeName, t0.Add(time.Second), withLabels(map[string]string{"app": "web"}), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "no init pod",
		},
		{
			name: "several components: pod with the right labels in the wrong namespace is ignored",
			cfg:  multi,
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{
				cniPod("cni-1", readyAt(podReadyAt)),
				agentPod("agent-elsewhere", withNamespace("default")), // not ready, but not the component either
			},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "several components: the only agent pod is on another node",
			cfg:  multi,
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{
				cniPod("cni-1", readyAt(podReadyAt)),
				newPod("agent-b", "node-b", t0.Add(time.Second), withLabels(map[string]string{"app": "agent"}), withNamespace("monitoring")),
			},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- Required node condition.
		{
			name:   "required condition holds",
			cfg:    func(c *Config) { c.RequiredCondition = "Ready=True" },
			node:   newNode(nodeName, t0, withNodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "required condition has another status",
			cfg:    func(c *Config) { c.RequiredCondition = "Ready=True" },
			node:   newNode(nodeName, t0, withNodeCondition(corev1.NodeReady, corev1.ConditionFalse)),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "node condition Ready is not True",
		},
		{
			name:   "required condition missing",
			cfg:    func(c *Config) { c.RequiredCondition = "example.com/NetworkReady=True" },
			node:   newNode(nodeName, t0, withNodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			want:   Decision{},
			reason: "node condition example.com/NetworkReady is not True",
		},
		{
			name:   "required condition holds but no pod is ready",
			cfg:    func(c *Config) { c.RequiredCondition = "Ready=True" },
			node:   newNode(nodeName, t0, withNodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second))},
			want:   Decision{},
			reason: `component "init" not ready`,
		},

		// --- Minimum hold.
		{
			name:   "ready inside the minimum hold waits exactly the remaining time",
			cfg:    func(c *Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			now:    t0.Add(2*time.Minute + 250*time.Millisecond),
			want:   Decision{RequeueAfter: 2*time.Minute + 59*time.Second + 750*time.Millisecond, ReadyAt: podReadyAt},
			reason: "minimum hold",
		},
		{
			name:   "ready at exactly the end of the minimum hold releases",
			cfg:    func(c *Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			now:    t0.Add(5 * time.Minute),
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "minimum hold is counted from node creation, not from readiness",
			cfg:    func(c *Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(t0.Add(4*time.Minute)))},
			now:    t0.Add(6 * time.Minute),
			want:   Decision{Release: true, ReadyAt: t0.Add(4 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name: "not ready inside the minimum hold, no maximum hold: wait for an event",
			cfg:  func(c *Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node: newNode(nodeName, t0),
			pods: []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second))},
			now:  t0.Add(time.Minute),
			want: Decision{},
			// Readiness must arrive by watch event; the min hold alone changes nothing.
			reason: `component "init" not ready`,
		},

		// --- Maximum hold.
		{
			name: "not ready before the maximum hold waits until the deadline",
			cfg: func(c *Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
			},
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(4*time.Minute + 500*time.Millisecond),
			want:   Decision{RequeueAfter: 5*time.Minute + 59*time.Second + 500*time.Millisecond},
			reason: `component "init" not ready`,
		},
		{
			name:   "no pod before the maximum hold waits until the deadline",
			cfg:    func(c *Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   newNode(nodeName, t0),
			now:    t0.Add(time.Minute),
			want:   Decision{RequeueAfter: 9 * time.Minute},
			reason: "no init pod",
		},
		{
			name:   "maximum hold reached with policy release",
			cfg:    func(c *Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(10 * time.Minute),
			want:   Decision{Release: true, TimedOut: true},
			reason: "maximum hold 10m0s reached",
		},
		{
			name:   "maximum hold long passed with policy release, no pod at all",
			cfg:    func(c *Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   newNode(nodeName, t0),
			now:    t0.Add(3 * time.Hour),
			want:   Decision{Release: true, TimedOut: true},
			reason: "no init pod",
		},
		{
			name: "maximum hold reached with policy keep",
			cfg: func(c *Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = TimeoutKeep
			},
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(11 * time.Minute),
			want:   Decision{TimedOut: true},
			reason: "maximum hold 10m0s reached",
		},
		{
			name: "maximum hold reached because the required condition never held",
			cfg: func(c *Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.RequiredCondition = "Ready=True"
			},
			node:   newNode(nodeName, t0, withNodeCondition(corev1.NodeReady, corev1.ConditionFalse)),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			now:    t0.Add(10 * time.Minute),
			want:   Decision{Release: true, TimedOut: true},
			reason: "node condition Ready is not True",
		},
		{
			name: "ready before the maximum hold releases without a timeout",
			cfg: func(c *Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = TimeoutKeep
			},
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(podReadyAt))},
			now:    t0.Add(3 * time.Minute),
			want:   Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "ready after the maximum hold is a normal release",
			cfg: func(c *Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = TimeoutKeep
			},
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(t0.Add(12*time.Minute)))},
			now:    t0.Add(13 * time.Minute),
			want:   Decision{Release: true, ReadyAt: t0.Add(12 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name: "minimum and maximum hold: ready inside the minimum hold waits for the minimum",
			cfg: func(c *Config) {
				c.MinHold = metav1.Duration{Duration: 2 * time.Minute}
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
			},
			node:   newNode(nodeName, t0),
			pods:   []*corev1.Pod{newPod("init-1", nodeName, t0.Add(time.Second), readyAt(t0.Add(30*time.Second)))},
			now:    t0.Add(time.Minute),
			want:   Decision{RequeueAfter: time.Minute, ReadyAt: t0.Add(30 * time.Second)},
			reason: "minimum hold",
		},
		{
			name: "minimum hold equal to maximum hold: not ready at the deadline times out",
			cfg: func(c *Config) {
				c.MinHold = metav1.Duration{Duration: 5 * time.Minute}
				c.MaxHold = metav1.Duration{Duration: 5 * time.Minute}
				c.TimeoutPolicy = TimeoutKeep
			},
			node:   newNode(nodeName, t0),
			now:    t0.Add(5 * time.Minute),
			want:   Decision{TimedOut: true},
			reason: "maximum hold 5m0s reached",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t, tc.cfg)
			at := tc.now
			if at.IsZero() {
				at = now
			}
			got := Decide(tc.node, tc.pods, at, cfg)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Decision{}, "Reason", "Met")); diff != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s\nreason: %q", diff, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Decide().Reason = %q, want it to contain %q", got.Reason, tc.reason)
			}
			if got.Wait() == got.Release {
				t.Errorf("Decide().Wait() = %v, want the opposite of Release %v", got.Wait(), got.Release)
			}
		})
	}
}

// TestDecideIsPure checks that Decide does not modify its inputs.
func TestDecideIsPure(t *testing.T) {
	cfg := validConfig(t, func(c *Config) { c.MinHold = metav1.Duration{Duration: time.Minute} })
	node := newNode("node-a", t0, withTaints(gateTaint))
	pods := []*corev1.Pod{newPod("init-1", "node-a", t0.Add(time.Second), readyAt(t0.Add(time.Minute)))}
	wantNode, wantPod := node.DeepCopy(), pods[0].DeepCopy()
	_ = Decide(node, pods, t0.Add(2*time.Minute), cfg)
	if diff := cmp.Diff(wantNode, node); diff != "" {
		t.Errorf("Decide() modified the node (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPod, pods[0]); diff != "" {
		t.Errorf("Decide() modified the pod (-want +got):\n%s", diff)
	}
}

// TestDecideUnvalidatedConfigPanics documents that an unvalidated Config is a programming error.
func TestDecideUnvalidatedConfigPanics(t *testing.T) {
	cfg := DefaultConfig()
	defer func() {
		if recover() == nil {
			t.Errorf("Decide() with an unvalidated Config did not panic")
		}
	}()
	Decide(newNode("node-a", t0), nil, t0, &cfg)
}

func BenchmarkDecide(b *testing.B) {
	cfg := validConfig(b, func(c *Config) {
		c.Components = []Component{
			{Name: "cni", Namespace: "kube-system", Selector: "app.kubernetes.io/name=cni,startup.k8s.io/component=init"},
			{Name: "csi", Namespace: "kube-system", Selector: "app.kubernetes.io/name=csi,startup.k8s.io/component=init"},
			{Name: "agent", Namespace: "kube-system", Selector: "app.kubernetes.io/name=agent,startup.k8s.io/component=init"},
		}
		c.RequiredCondition = "Ready=True"
		c.MinHold = metav1.Duration{Duration: 10 * time.Second}
		c.MaxHold = metav1.Duration{Duration: 15 * time.Minute}
	})
	node := newNode("aks-nodepool1-12345678-vmss000042", t0,
		withTaints(gateTaint, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}),
		withNodeLabel("kubernetes.azure.com/mode", "user"),
		withNodeLabel("topology.kubernetes.io/zone", "westeurope-1"),
		withNodeCondition(corev1.NodeMemoryPressure, corev1.ConditionFalse),
		withNodeCondition(corev1.NodeDiskPressure, corev1.ConditionFalse),
		withNodeCondition(corev1.NodeReady, corev1.ConditionTrue))
	var pods []*corev1.Pod
	for i, name := range []string{"cni", "csi", "agent"} {
		pods = append(pods, newPod(name+"-x7k2p", node.Name, t0.Add(time.Second),
			withLabels(map[string]string{"app.kubernetes.io/name": name, "startup.k8s.io/component": "init", "controller-revision-hash": "5d8f7"}),
			withContainers("main", "sidecar"),
			ownedByDaemonSet(name),
			readyAt(t0.Add(time.Duration(20+i)*time.Second))))
	}
	now := t0.Add(time.Minute)
	if d := Decide(node, pods, now, cfg); !d.Release {
		b.Fatalf("Decide() = %+v, want Release", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Decide(node, pods, now, cfg)
	}
}

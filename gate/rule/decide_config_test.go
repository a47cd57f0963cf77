package rule_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// The cases below decide through the rule that a Config's top-level fields describe, so
// they also cover how the config compiles that rule.
// t0 is the creation time of the node under test; every other time is relative to it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gateTaint is the default startup taint.
var gateTaint = corev1.Taint{Key: config.DefaultTaintKey, Value: config.DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}

// decide is the decision of the config's first rule: the default rule that cmd/gate's
// flags describe, when the config has no rules.
func decide(node *corev1.Node, pods []*corev1.Pod, now time.Time, cfg *config.Config) rule.Decision {
	return decideExpecting(node, pods, nil, now, cfg)
}

// decideExpecting is decide, told which components a DaemonSet of theirs targets the node with.
func decideExpecting(node *corev1.Node, pods []*corev1.Pod, expected map[string]bool, now time.Time, cfg *config.Config) rule.Decision {
	return rule.Decide(cfg.EffectiveRules()[0], cfg.Readiness(), rule.Input{Node: node, Pods: pods, Expected: expected, Now: now})
}

func TestDecide(t *testing.T) {
	const nodeName = "node-a"
	// Default decision time: ten minutes after the node was created.
	now := t0.Add(10 * time.Minute)
	podReadyAt := t0.Add(2 * time.Minute)

	multi := func(c *config.Config) {
		c.Components = []rule.Component{
			{Name: "cni", Namespace: "kube-system", Selector: "app=cni"},
			{Name: "agent", Namespace: "monitoring", Selector: "app=agent"},
		}
	}
	cniPod := func(name string, opts ...testobj.PodOpt) *corev1.Pod {
		return testobj.Pod(name, nodeName, t0.Add(time.Second), append([]testobj.PodOpt{testobj.Labels(map[string]string{"app": "cni"})}, opts...)...)
	}
	agentPod := func(name string, opts ...testobj.PodOpt) *corev1.Pod {
		return testobj.Pod(name, nodeName, t0.Add(time.Second),
			append([]testobj.PodOpt{testobj.Labels(map[string]string{"app": "agent"}), testobj.Namespace("monitoring")}, opts...)...)
	}

	tests := []struct {
		name   string
		cfg    func(*config.Config)
		node   *corev1.Node
		pods   []*corev1.Pod
		now    time.Time // zero: now
		want   rule.Decision
		reason string // substring of want.Reason
	}{
		// --- Which Pods count.
		{
			name:   "no pods at all",
			node:   testobj.Node(nodeName, t0),
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "ready init pod on the node releases",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "ready init pod on another node is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", "node-b", t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "unscheduled ready init pod is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", "", t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "testobj.Terminating ready init pod is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt), testobj.Terminating(t0.Add(3*time.Minute)))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "ready init pod older than the node (previous node with the same name) is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-old", nodeName, t0.Add(-time.Second), testobj.ReadyAt(t0.Add(-time.Millisecond)))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name: "stale ready pod does not mask the new node's unready pod",
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{
				testobj.Pod("init-old", nodeName, t0.Add(-time.Hour), testobj.ReadyAt(t0.Add(-50*time.Minute))),
				testobj.Pod("init-new", nodeName, t0.Add(time.Second)),
			},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "init pod created at exactly the node's creation time counts",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0, testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "pod without the component label is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("web-1", nodeName, t0.Add(time.Second), testobj.Labels(map[string]string{"app": "web"}), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "pod with the component key but another value is ignored",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("x-1", nodeName, t0.Add(time.Second), testobj.Labels(map[string]string{"startup.k8s.io/component": "other"}), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "default component matches in any namespace",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.Namespace("team-a"), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- When a Pod is ready.
		{
			name:   "Ready condition false",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.PodCondition(corev1.PodReady, corev1.ConditionFalse, podReadyAt), testobj.ContainerStatuses(true))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "no Ready condition, all containers ready",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ContainerStatuses(true))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true but one container not ready",
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.Containers("a", "b"),
				testobj.PodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), testobj.ContainerStatuses(true, false))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true but fewer container statuses than containers",
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.Containers("a", "b"),
				testobj.PodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), testobj.ContainerStatuses(true))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name: "Ready condition true and every one of several containers ready",
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.Containers("a", "b"),
				testobj.PodCondition(corev1.PodReady, corev1.ConditionTrue, podReadyAt), testobj.ContainerStatuses(true, true))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "early-ready annotation on an unready pod releases",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.PodAnnotation(config.DefaultReadyAnnotation, "true"))},
			want:   rule.Decision{Release: true},
			reason: "all required components ready",
		},
		{
			name:   "early-ready annotation with a value other than true does not count",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.PodAnnotation(config.DefaultReadyAnnotation, "yes"))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "early-ready annotation on a testobj.Terminating pod does not count",
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.PodAnnotation(config.DefaultReadyAnnotation, "true"), testobj.Terminating(t0.Add(time.Minute)))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name:   "custom ready annotation key",
			cfg:    func(c *config.Config) { c.ReadyAnnotation = "example.com/done" },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.PodAnnotation("example.com/done", "true"))},
			want:   rule.Decision{Release: true},
			reason: "all required components ready",
		},
		{
			name:   "annotationOnly: a fully ready pod without the annotation does not count",
			cfg:    func(c *config.Config) { c.AnnotationOnly = true },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},
		{
			name:   "annotationOnly: the annotation releases",
			cfg:    func(c *config.Config) { c.AnnotationOnly = true },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt), testobj.PodAnnotation(config.DefaultReadyAnnotation, "true"))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "one ready pod of a component is enough",
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{
				testobj.Pod("init-1", nodeName, t0.Add(time.Second)),
				testobj.Pod("init-2", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt)),
			},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- Several components.
		{
			name:   "several components: both ready, ReadyAt is the later",
			cfg:    multi,
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", testobj.ReadyAt(t0.Add(3*time.Minute))), agentPod("agent-1", testobj.ReadyAt(t0.Add(90*time.Second)))},
			want:   rule.Decision{Release: true, ReadyAt: t0.Add(3 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name:   "several components: one present and not ready holds",
			cfg:    multi,
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", testobj.ReadyAt(podReadyAt)), agentPod("agent-1")},
			want:   rule.Decision{},
			reason: `component "agent" not ready`,
		},
		{
			name:   "several components: a component without a pod on the node is ignored",
			cfg:    multi,
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{cniPod("cni-1", testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "several components: none has a pod",
			cfg:    multi,
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("web", nodeName, t0.Add(time.Second), testobj.Labels(map[string]string{"app": "web"}), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "no init pod",
		},
		{
			name: "several components: pod with the right labels in the wrong namespace is ignored",
			cfg:  multi,
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{
				cniPod("cni-1", testobj.ReadyAt(podReadyAt)),
				agentPod("agent-elsewhere", testobj.Namespace("default")), // not ready, but not the component either
			},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "several components: the only agent pod is on another node",
			cfg:  multi,
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{
				cniPod("cni-1", testobj.ReadyAt(podReadyAt)),
				testobj.Pod("agent-b", "node-b", t0.Add(time.Second), testobj.Labels(map[string]string{"app": "agent"}), testobj.Namespace("monitoring")),
			},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},

		// --- Required node condition.
		{
			name:   "required condition holds",
			cfg:    func(c *config.Config) { c.RequiredCondition = "Ready=True" },
			node:   testobj.Node(nodeName, t0, testobj.NodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "required condition has another status",
			cfg:    func(c *config.Config) { c.RequiredCondition = "Ready=True" },
			node:   testobj.Node(nodeName, t0, testobj.NodeCondition(corev1.NodeReady, corev1.ConditionFalse)),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "node condition Ready is not True",
		},
		{
			name:   "required condition missing",
			cfg:    func(c *config.Config) { c.RequiredCondition = "example.com/NetworkReady=True" },
			node:   testobj.Node(nodeName, t0, testobj.NodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			want:   rule.Decision{},
			reason: "node condition example.com/NetworkReady is not True",
		},
		{
			name:   "required condition holds but no pod is ready",
			cfg:    func(c *config.Config) { c.RequiredCondition = "Ready=True" },
			node:   testobj.Node(nodeName, t0, testobj.NodeCondition(corev1.NodeReady, corev1.ConditionTrue)),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second))},
			want:   rule.Decision{},
			reason: `component "init" not ready`,
		},

		// --- Minimum hold.
		{
			name:   "ready inside the minimum hold waits exactly the remaining time",
			cfg:    func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			now:    t0.Add(2*time.Minute + 250*time.Millisecond),
			want:   rule.Decision{RequeueAfter: 2*time.Minute + 59*time.Second + 750*time.Millisecond, ReadyAt: podReadyAt},
			reason: "minimum hold",
		},
		{
			name:   "ready at exactly the end of the minimum hold releases",
			cfg:    func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			now:    t0.Add(5 * time.Minute),
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name:   "minimum hold is counted from node creation, not from readiness",
			cfg:    func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(t0.Add(4*time.Minute)))},
			now:    t0.Add(6 * time.Minute),
			want:   rule.Decision{Release: true, ReadyAt: t0.Add(4 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name: "not ready inside the minimum hold, no maximum hold: wait for an event",
			cfg:  func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Minute} },
			node: testobj.Node(nodeName, t0),
			pods: []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second))},
			now:  t0.Add(time.Minute),
			want: rule.Decision{},
			// Readiness must arrive by watch event; the min hold alone changes nothing.
			reason: `component "init" not ready`,
		},

		// --- Maximum hold.
		{
			name: "not ready before the maximum hold waits until the deadline",
			cfg: func(c *config.Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
			},
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(4*time.Minute + 500*time.Millisecond),
			want:   rule.Decision{RequeueAfter: 5*time.Minute + 59*time.Second + 500*time.Millisecond},
			reason: `component "init" not ready`,
		},
		{
			name:   "no pod before the maximum hold waits until the deadline",
			cfg:    func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			now:    t0.Add(time.Minute),
			want:   rule.Decision{RequeueAfter: 9 * time.Minute},
			reason: "no init pod",
		},
		{
			name:   "maximum hold reached with policy release",
			cfg:    func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(10 * time.Minute),
			want:   rule.Decision{Release: true, TimedOut: true},
			reason: "maximum hold 10m0s reached",
		},
		{
			name:   "maximum hold long passed with policy release, no pod at all",
			cfg:    func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 10 * time.Minute} },
			node:   testobj.Node(nodeName, t0),
			now:    t0.Add(3 * time.Hour),
			want:   rule.Decision{Release: true, TimedOut: true},
			reason: "no init pod",
		},
		{
			name: "maximum hold reached with policy keep",
			cfg: func(c *config.Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
			},
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second))},
			now:    t0.Add(11 * time.Minute),
			want:   rule.Decision{TimedOut: true},
			reason: "maximum hold 10m0s reached",
		},
		{
			name: "maximum hold reached because the required condition never held",
			cfg: func(c *config.Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.RequiredCondition = "Ready=True"
			},
			node:   testobj.Node(nodeName, t0, testobj.NodeCondition(corev1.NodeReady, corev1.ConditionFalse)),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			now:    t0.Add(10 * time.Minute),
			want:   rule.Decision{Release: true, TimedOut: true},
			reason: "node condition Ready is not True",
		},
		{
			name: "ready before the maximum hold releases without a timeout",
			cfg: func(c *config.Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
			},
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(podReadyAt))},
			now:    t0.Add(3 * time.Minute),
			want:   rule.Decision{Release: true, ReadyAt: podReadyAt},
			reason: "all required components ready",
		},
		{
			name: "ready after the maximum hold is a normal release",
			cfg: func(c *config.Config) {
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
			},
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(t0.Add(12*time.Minute)))},
			now:    t0.Add(13 * time.Minute),
			want:   rule.Decision{Release: true, ReadyAt: t0.Add(12 * time.Minute)},
			reason: "all required components ready",
		},
		{
			name: "minimum and maximum hold: ready inside the minimum hold waits for the minimum",
			cfg: func(c *config.Config) {
				c.MinHold = metav1.Duration{Duration: 2 * time.Minute}
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
			},
			node:   testobj.Node(nodeName, t0),
			pods:   []*corev1.Pod{testobj.Pod("init-1", nodeName, t0.Add(time.Second), testobj.ReadyAt(t0.Add(30*time.Second)))},
			now:    t0.Add(time.Minute),
			want:   rule.Decision{RequeueAfter: time.Minute, ReadyAt: t0.Add(30 * time.Second)},
			reason: "minimum hold",
		},
		{
			name: "minimum hold equal to maximum hold: not ready at the deadline times out",
			cfg: func(c *config.Config) {
				c.MinHold = metav1.Duration{Duration: 5 * time.Minute}
				c.MaxHold = metav1.Duration{Duration: 5 * time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
			},
			node:   testobj.Node(nodeName, t0),
			now:    t0.Add(5 * time.Minute),
			want:   rule.Decision{TimedOut: true},
			reason: "maximum hold 5m0s reached",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, tc.cfg)
			at := tc.now
			if at.IsZero() {
				at = now
			}
			// Every row is a node the rule holds: tainted at creation.
			node := tc.node.DeepCopy()
			if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&gateTaint) }) {
				node.Spec.Taints = append(node.Spec.Taints, gateTaint)
			}
			got := decide(node, tc.pods, at, cfg)
			if tc.want.Release {
				tc.want.Write = rule.WriteRelease
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(rule.Decision{}, "Reason", "Met", "State", "Boot", "Prints")); diff != "" {
				t.Errorf("decide() mismatch (-want +got):\n%s\nreason: %q", diff, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("decide().Reason = %q, want it to contain %q", got.Reason, tc.reason)
			}
			if got.Wait() == got.Release {
				t.Errorf("decide().Wait() = %v, want the opposite of Release %v", got.Wait(), got.Release)
			}
		})
	}
}

// TestDecideIsPure checks that Decide does not modify its inputs.
func TestDecideIsPure(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) { c.MinHold = metav1.Duration{Duration: time.Minute} })
	node := testobj.Node("node-a", t0, testobj.Taints(gateTaint))
	pods := []*corev1.Pod{testobj.Pod("init-1", "node-a", t0.Add(time.Second), testobj.ReadyAt(t0.Add(time.Minute)))}
	wantNode, wantPod := node.DeepCopy(), pods[0].DeepCopy()
	_ = decide(node, pods, t0.Add(2*time.Minute), cfg)
	if diff := cmp.Diff(wantNode, node); diff != "" {
		t.Errorf("decide() modified the node (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPod, pods[0]); diff != "" {
		t.Errorf("decide() modified the pod (-want +got):\n%s", diff)
	}
}

func BenchmarkDecide(b *testing.B) {
	cfg := testobj.ValidConfig(b, func(c *config.Config) {
		c.Components = []rule.Component{
			{Name: "cni", Namespace: "kube-system", Selector: "app.kubernetes.io/name=cni,startup.k8s.io/component=init"},
			{Name: "csi", Namespace: "kube-system", Selector: "app.kubernetes.io/name=csi,startup.k8s.io/component=init"},
			{Name: "agent", Namespace: "kube-system", Selector: "app.kubernetes.io/name=agent,startup.k8s.io/component=init"},
		}
		c.RequiredCondition = "Ready=True"
		c.MinHold = metav1.Duration{Duration: 10 * time.Second}
		c.MaxHold = metav1.Duration{Duration: 15 * time.Minute}
	})
	node := testobj.Node("aks-nodepool1-12345678-vmss000042", t0,
		testobj.Taints(gateTaint, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}),
		testobj.NodeLabel("kubernetes.azure.com/mode", "user"),
		testobj.NodeLabel("topology.kubernetes.io/zone", "westeurope-1"),
		testobj.NodeCondition(corev1.NodeMemoryPressure, corev1.ConditionFalse),
		testobj.NodeCondition(corev1.NodeDiskPressure, corev1.ConditionFalse),
		testobj.NodeCondition(corev1.NodeReady, corev1.ConditionTrue))
	var pods []*corev1.Pod
	for i, name := range []string{"cni", "csi", "agent"} {
		pods = append(pods, testobj.Pod(name+"-x7k2p", node.Name, t0.Add(time.Second),
			testobj.Labels(map[string]string{"app.kubernetes.io/name": name, "startup.k8s.io/component": "init", "controller-revision-hash": "5d8f7"}),
			testobj.Containers("main", "sidecar"),
			testobj.OwnedByDaemonSet(name),
			testobj.ReadyAt(t0.Add(time.Duration(20+i)*time.Second))))
	}
	now := t0.Add(time.Minute)
	if d := decide(node, pods, now, cfg); !d.Release {
		b.Fatalf("decide() = %+v, want Release", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		decide(node, pods, now, cfg)
	}
}

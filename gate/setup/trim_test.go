package setup

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

var (
	trimT0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	gateTaint = corev1.Taint{Key: config.DefaultTaintKey, Value: config.DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}
	oosTaint  = corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
)

// trimConfigs are configurations whose rules read different parts of a Node: the default
// rule, a required condition, a rule that gates reboots, a condition rule.
func trimConfigs(t *testing.T) map[string]*config.Config {
	t.Helper()
	return map[string]*config.Config{
		"default": testobj.ValidConfig(t, nil),
		"required condition": testobj.ValidConfig(t, func(c *config.Config) {
			c.RequiredCondition = "example.com/NetworkReady=True"
		}),
		"rules": testobj.ValidConfig(t, func(c *config.Config) {
			c.Rules = []rule.Rule{
				{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, OnReboot: rule.RebootGate,
					Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}},
				{Name: "oos", Mode: rule.Condition, Taint: oosTaint, Match: []rule.Match{
					{Type: "example.com/Preempted", Status: "True"}, {Type: corev1.NodeReady, Status: "False|Unknown"}}},
			}
		}),
		"pool selector": testobj.ValidConfig(t, func(c *config.Config) { c.NodeSelector = "pool=gpu" }),
	}
}

// cloudNode is a node as a cloud's kubelet and controllers leave it, in some state of the
// gate's: with conditions of every kind, images, addresses and foreign annotations.
func cloudNode(name string, mod func(n *corev1.Node)) *corev1.Node {
	at := metav1.NewTime(trimT0.Add(-time.Minute))
	beat := metav1.NewTime(trimT0)
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: at, LastHeartbeatTime: beat, Reason: "Because", Message: "a long message"}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42",
			CreationTimestamp: metav1.NewTime(trimT0.Add(-time.Hour)),
			Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "zone-a", "pool": "gpu",
				corev1.LabelOSStable: "linux", rule.KarpenterRegisteredLabel: "true"},
			Annotations: map[string]string{"csi.volume.kubernetes.io/nodeid": `{"ebs.csi.aws.com":"i-0123"}`,
				"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///zone-a/i-0123", PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{gateTaint}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue), cond(corev1.NodeMemoryPressure, corev1.ConditionFalse),
				cond("example.com/NetworkReady", corev1.ConditionTrue), cond("KernelDeadlock", corev1.ConditionFalse)},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.example.com/app:v1"}, SizeBytes: 1 << 30}},
			NodeInfo:  corev1.NodeSystemInfo{BootID: "boot-2", KernelVersion: "6.1", KubeletVersion: "v1.36.3"},
		},
	}
	if mod != nil {
		mod(n)
	}
	return n
}

// trimNodes are nodes in every state the gate's rules tell apart.
func trimNodes() []*corev1.Node {
	return []*corev1.Node{
		cloudNode("held", nil),
		cloudNode("released", func(n *corev1.Node) {
			n.Spec.Taints = nil
			n.Annotations[config.DefaultCompletedAnnotation] = "1767225600"
			n.Annotations[config.DefaultCompletedAnnotation+"_bootID"] = "boot-1"
		}),
		cloudNode("rebooted, re-gated", func(n *corev1.Node) {
			n.Annotations[config.DefaultCompletedAnnotation] = "1767225600"
			n.Annotations[config.DefaultCompletedAnnotation+"_bootID"] = "boot-1"
			n.Annotations[config.DefaultCompletedAnnotation+"_regatedAt"] = "1767229200"
		}),
		cloudNode("network not ready", func(n *corev1.Node) { n.Status.Conditions[2].Status = corev1.ConditionFalse }),
		cloudNode("preempted, not ready", func(n *corev1.Node) {
			n.Status.Conditions[0].Status = corev1.ConditionUnknown
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "example.com/Preempted", Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(trimT0.Add(-30 * time.Second))})
		}),
		cloudNode("oos tainted", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, oosTaint)
			n.Annotations[config.DefaultTaintedAnnotation+".oos"] = "1767225600"
		}),
		cloudNode("system pool", func(n *corev1.Node) { n.Labels["kubernetes.azure.com/mode"] = "system"; n.Spec.Taints = nil }),
		cloudNode("cpu pool", func(n *corev1.Node) { n.Labels["pool"] = "cpu" }),
		cloudNode("returned at registration", func(n *corev1.Node) {
			n.Annotations[config.DefaultCompletedAnnotation] = "1767225600"
			n.Annotations[config.DefaultCompletedAnnotation+"_bootID"] = "boot-2"
		}),
	}
}

// TestNodeTrimDecides: every decision the gate makes reads the trimmed Node as it would
// the whole one. Whatever a rule reads, the trim must keep.
func TestNodeTrimDecides(t *testing.T) {
	for name, cfg := range trimConfigs(t) {
		trim := nodeTrim(cfg, Options{}.cachedLabels(cfg))
		for _, node := range trimNodes() {
			t.Run(name+"/"+node.Name, func(t *testing.T) {
				o, err := trim(node.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				trimmed := o.(*corev1.Node)
				type verdict struct {
					Gated, Released, HasTaint, Awaiting bool
					Decisions                           []rule.Decision
					Conditions                          []rule.ConditionDecision
					Boots                               []rule.Boot
				}
				judge := func(n *corev1.Node) verdict {
					v := verdict{Gated: cfg.Gated(n), Released: cfg.Released(n), HasTaint: cfg.HasTaint(n), Awaiting: rule.AwaitingStartupTaints(n)}
					for _, rl := range cfg.EffectiveRules() {
						v.Boots = append(v.Boots, rl.BootOf(n))
						if rl.Mode == rule.Condition {
							v.Conditions = append(v.Conditions, rule.DecideCondition(rl, n))
							continue
						}
						v.Decisions = append(v.Decisions, rule.Decide(rl, cfg.Readiness(), rule.Input{Node: n, Now: trimT0}))
					}
					return v
				}
				if diff := cmp.Diff(judge(node), judge(trimmed)); diff != "" {
					t.Errorf("the trimmed node is judged otherwise (-whole +trimmed):\n%s", diff)
				}
			})
		}
	}
}

// TestNodeTrimDrops: what no rule reads is gone from the cached Node.
func TestNodeTrimDrops(t *testing.T) {
	cfgs := trimConfigs(t)
	// Karpenter's label is read by every rule, the OS label is kept by default for the
	// DaemonSets' node selectors, and the pool label only when a rule's selector reads it.
	kept := []string{corev1.LabelOSStable, rule.KarpenterRegisteredLabel}
	tests := []struct {
		cfg         string
		labels      []string
		annotations []string
		conditions  []corev1.NodeConditionType
	}{
		// The boot ID annotation extends the completion annotation's key: kept, read or not.
		{cfg: "default", labels: kept, annotations: []string{config.DefaultCompletedAnnotation, config.DefaultCompletedAnnotation + "_bootID"}},
		{cfg: "required condition", labels: kept, annotations: []string{config.DefaultCompletedAnnotation, config.DefaultCompletedAnnotation + "_bootID"},
			conditions: []corev1.NodeConditionType{"example.com/NetworkReady"}},
		{cfg: "rules", labels: kept, annotations: []string{config.DefaultCompletedAnnotation, config.DefaultCompletedAnnotation + "_bootID", config.DefaultTaintedAnnotation + ".oos"},
			conditions: []corev1.NodeConditionType{corev1.NodeReady}},
		{cfg: "pool selector", labels: append([]string{"pool"}, kept...), annotations: []string{config.DefaultCompletedAnnotation, config.DefaultCompletedAnnotation + "_bootID"}},
	}
	for _, tc := range tests {
		t.Run(tc.cfg, func(t *testing.T) {
			node := cloudNode("n", func(n *corev1.Node) {
				n.Annotations[config.DefaultCompletedAnnotation] = "1"
				n.Annotations[config.DefaultCompletedAnnotation+"_bootID"] = "boot-1"
				n.Annotations[config.DefaultTaintedAnnotation+".oos"] = "1"
			})
			o, err := nodeTrim(cfgs[tc.cfg], Options{}.cachedLabels(cfgs[tc.cfg]))(node)
			if err != nil {
				t.Fatal(err)
			}
			got := o.(*corev1.Node)
			var annotations []string
			for k := range got.Annotations {
				annotations = append(annotations, k)
			}
			var conditions []corev1.NodeConditionType
			for _, c := range got.Status.Conditions {
				conditions = append(conditions, c.Type)
				if c.Reason != "" || c.Message != "" || !c.LastHeartbeatTime.IsZero() || c.LastTransitionTime.IsZero() {
					t.Errorf("condition %s kept %+v: want its type, status and transition time only", c.Type, c)
				}
			}
			slices.Sort(annotations)
			slices.Sort(tc.annotations)
			if diff := cmp.Diff(tc.annotations, annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			labels := slices.Sorted(maps.Keys(got.Labels))
			slices.Sort(tc.labels)
			if diff := cmp.Diff(tc.labels, labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.conditions, conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if len(got.Spec.Taints) != 1 || got.Status.NodeInfo.BootID != "boot-2" || got.ResourceVersion != "42" {
				t.Errorf("trimmed what the gate reads: taints %v, boot ID %q, resourceVersion %q",
					got.Spec.Taints, got.Status.NodeInfo.BootID, got.ResourceVersion)
			}
			if got.Spec.ProviderID != "" || got.Spec.PodCIDR != "" || len(got.Status.Images) > 0 || len(got.Status.Addresses) > 0 ||
				got.Status.NodeInfo.KernelVersion != "" || len(got.ManagedFields) > 0 {
				t.Errorf("kept what no rule reads: %+v", got)
			}
		})
	}
}

// TestPodTrimDecides: every rule decides on trimmed init Pods as on whole ones.
func TestPodTrimDecides(t *testing.T) {
	created := trimT0.Add(-time.Hour)
	node := cloudNode("n", nil)
	podAt := created.Add(time.Second)
	extras := func(p *corev1.Pod) {
		p.GenerateName = "init-"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "init", UID: "ds-uid"}}
		p.Spec.Tolerations = []corev1.Toleration{{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists}}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["controller-revision-hash"] = "6c8f9d7b5d"
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["cni.projectcalico.org/podIP"] = "10.0.0.1/32"
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(podAt)},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, Reason: "Why", Message: "a message"})
	}
	pods := map[string][]*corev1.Pod{
		"ready":                   {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)))},
		"not ready":               {testobj.Pod("a", "n", podAt, testobj.PodCondition(corev1.PodReady, corev1.ConditionFalse, trimT0.Add(-time.Minute)), testobj.ContainerStatuses(false))},
		"annotated ready":         {testobj.Pod("a", "n", podAt, testobj.PodAnnotation(config.DefaultReadyAnnotation, "true"))},
		"a container down":        {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)), testobj.Containers("a", "b"), testobj.ContainerStatuses(true, false))},
		"a container not started": {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)), testobj.Containers("a", "b"), testobj.ContainerStatuses(true))},
		"terminating":             {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)), testobj.Terminating(trimT0))},
		"older than node":         {testobj.Pod("a", "n", created.Add(-time.Minute), testobj.ReadyAt(trimT0.Add(-time.Minute)))},
		"restarted ready": {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)), func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].ContainerID, p.Status.ContainerStatuses[0].RestartCount = "containerd://0123abcd", 3
		})},
		"other component": {testobj.Pod("a", "n", podAt, testobj.ReadyAt(trimT0.Add(-time.Minute)), testobj.Labels(map[string]string{"startup.k8s.io/component": "gpu"}))},
	}
	for name, cfg := range trimConfigs(t) {
		trim := podTrim(cfg)
		for state, ps := range pods {
			t.Run(name+"/"+state, func(t *testing.T) {
				var trimmed []*corev1.Pod
				for _, p := range ps {
					extras(p)
					o, err := trim(p.DeepCopy())
					if err != nil {
						t.Fatal(err)
					}
					trimmed = append(trimmed, o.(*corev1.Pod))
				}
				for _, rl := range cfg.EffectiveRules() {
					if rl.Mode == rule.Condition {
						continue
					}
					in := rule.Input{Node: node, Now: trimT0}
					want := rule.Decide(rl, cfg.Readiness(), rule.Input{Node: in.Node, Now: in.Now, Pods: ps})
					got := rule.Decide(rl, cfg.Readiness(), rule.Input{Node: in.Node, Now: in.Now, Pods: trimmed})
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("rule %s decides otherwise on the trimmed Pods (-whole +trimmed):\n%s", rl.Name, diff)
					}
				}
				if len(trimmed[0].Spec.Tolerations) > 0 || len(trimmed[0].OwnerReferences) > 0 || len(trimmed[0].Status.Conditions) > 1 ||
					len(trimmed[0].Spec.Containers) > 0 || trimmed[0].Labels["controller-revision-hash"] != "" ||
					trimmed[0].Annotations["cni.projectcalico.org/podIP"] != "" {
					t.Errorf("kept what Decide does not read: %+v", trimmed[0])
				}
			})
		}
	}
}

// TestInterner: equal strings come back as one, the table stops at its bound, and what
// comes back is always equal to what went in.
func TestInterner(t *testing.T) {
	in := newInterner()
	a := in.set(map[string]string{"topology.kubernetes.io/zone": "zone-" + "a"})
	b := in.set(map[string]string{"topology.kubernetes.io/zone": "zone-" + string([]byte("a"))})
	if unsafe.StringData(a["topology.kubernetes.io/zone"]) != unsafe.StringData(b["topology.kubernetes.io/zone"]) {
		t.Errorf("two equal values are two strings")
	}
	for i := range maxInterned + 10 {
		s := strconv.Itoa(i)
		if got := in.get(s); got != s {
			t.Fatalf("get(%q) = %q", s, got)
		}
	}
	if len(in.m) != maxInterned {
		t.Errorf("the table holds %d strings, want its bound %d", len(in.m), maxInterned)
	}
	if in.set(nil) != nil {
		t.Errorf("set(nil) is not nil")
	}
}

// TestInternerShares: objects with the same entries share one map, whatever else they
// carry that keep drops; other entries make another map, and the table stops at its bound.
func TestInternerShares(t *testing.T) {
	in := newInterner()
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	keep := func(k string) bool { return k != "kubernetes.io/hostname" }
	a := in.shared(map[string]string{"kubernetes.io/hostname": "a", "zone": "z1", "os": "linux"}, keep)
	b := in.shared(map[string]string{"kubernetes.io/hostname": "b", "zone": "z1", "os": "linux"}, keep)
	if !same(a, b) || !maps.Equal(a, map[string]string{"zone": "z1", "os": "linux"}) {
		t.Errorf("two nodes alike but for a dropped label: %v and %v, want one map of zone and os", a, b)
	}
	// Entries that would read alike run together: "ab"="c" and "a"="bc".
	c, d := in.shared(map[string]string{"ab": "c"}, nil), in.shared(map[string]string{"a": "bc"}, nil)
	if same(c, d) || c["ab"] != "c" || d["a"] != "bc" {
		t.Errorf("different entries share a map: %v and %v", c, d)
	}
	if got := in.shared(map[string]string{"kubernetes.io/hostname": "a"}, keep); got != nil {
		t.Errorf("no entry kept: %v, want nil", got)
	}
	for i := range maxInterned + 10 {
		s := strconv.Itoa(i)
		if got := in.shared(map[string]string{"k": s}, nil); got["k"] != s {
			t.Fatalf("shared(k=%s) = %v", s, got)
		}
	}
	if len(in.maps) != maxInterned {
		t.Errorf("the table holds %d maps, want its bound %d", len(in.maps), maxInterned)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// TestPreflight: on a cluster with an AKS system node, a GPU node whose taint the init
// DaemonSet does not tolerate, and a CPU node, preflight names the exclude requirement that
// matches nothing (EKS's, here), the DaemonSet and the taint that keep the component off the
// GPU node, and a webhook that did not taint its dry-run CREATE (none is registered on this
// fake); it passes the AKS requirement and fails as a whole.
func TestPreflight(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Exclude = append(cfg.Exclude, metav1.LabelSelectorRequirement{Key: "eks.amazonaws.com/nodegroup", Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ready := func(n *corev1.Node) *corev1.Node {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		return n
	}
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "init", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": "init"}},
			Spec:       corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}}}
	c := fake.NewClientBuilder().WithScheme(gate.Scheme()).WithObjects(
		ready(node("system-0", map[string]string{"kubernetes.azure.com/mode": "system"}, nil)),
		ready(node("gpu-0", map[string]string{"pool": "gpu"}, nil, gpu)),
		ready(node("cpu-0", map[string]string{"pool": "cpu"}, nil)),
		ds,
	).Build()
	var out bytes.Buffer
	err := runPreflight(context.Background(), c, &cfg, time.Now(), &out)
	t.Log("\n" + out.String())
	if !errors.Is(err, errPreflight) {
		t.Errorf("preflight returned %v, want its problems", err)
	}
	for _, want := range []string{
		"ok       exclude[0] kubernetes.azure.com/mode in (system) matches 1 node(s): system-0",
		"PROBLEM  exclude[2] eks.amazonaws.com/nodegroup in (system) matches no node",
		"PROBLEM  rule default: component init: daemonset kube-system/init does not tolerate taint nvidia.com/gpu=present:NoSchedule on 1 node(s): gpu-0",
		"PROBLEM  webhook: a dry-run Node CREATE like a gated node came back without the startup taint",
		"ok       rule default on the nodes now:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "cpu-0") {
		t.Errorf("the report names cpu-0, where nothing is wrong")
	}
}

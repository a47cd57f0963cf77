package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestNodeLines: the demo prints a node's creation once, saying whether the gate's taint
// was on it, and its release once, when the completion is there and the taint is gone.
func TestNodeLines(t *testing.T) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	node := func(tainted, completed bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(time.Now().Add(-3 * time.Second)), Annotations: map[string]string{}}}
		if tainted {
			n.Spec.Taints = []corev1.Taint{cfg.Taint}
		}
		if completed {
			n.Annotations[cfg.CompletedAnnotation] = "1"
		}
		return n
	}
	s := &nodeSteps{}
	for _, step := range []struct {
		node *corev1.Node
		want []string // line prefixes
	}{
		{node(true, false), []string{"node created, tainted startup.k8s.io/initializing"}},
		{node(true, false), nil},
		{node(true, true), nil}, // completed, taint still on: not released yet
		{node(false, true), []string{"released after 3."}},
		{node(false, true), nil},
	} {
		got := nodeLines(s, step.node, &cfg)
		if !slices.EqualFunc(got, step.want, strings.HasPrefix) {
			t.Errorf("lines %q, want prefixes %q", got, step.want)
		}
	}
	if got := nodeLines(&nodeSteps{}, node(false, false), &cfg); !slices.Equal(got, []string{"node created, NOT tainted"}) {
		t.Errorf("untainted node: %q", got)
	}
}

// TestDemoMatchesExamples: the demo runs what a user of deploy/examples would: the
// NodePool's startupTaints and the inflate Deployment's CPU request are the examples'.
func TestDemoMatchesExamples(t *testing.T) {
	sc, err := scenario.Load("../../" + demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	var pool struct {
		Spec struct {
			Template struct {
				Spec struct {
					StartupTaints []corev1.Taint `json:"startupTaints"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	readYAML(t, "../../deploy/examples/karpenter-nodepool.yaml", &pool)
	var want []corev1.Taint
	for _, tt := range sc.Autoscaler.Karpenter.StartupTaints {
		want = append(want, tt.Core())
	}
	if got := pool.Spec.Template.Spec.StartupTaints; !slices.Equal(got, want) {
		t.Errorf("example NodePool's startupTaints %v, the demo's %v", got, want)
	}
	var inflate appsv1.Deployment
	readYAML(t, "../../deploy/examples/workload.yaml", &inflate)
	cpu := inflate.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if len(sc.Workloads) != 1 || sc.Workloads[0].Name != inflate.Name || sc.Workloads[0].CPU != cpu.String() {
		t.Errorf("the demo's workloads %+v, want one named %s of %s CPU", sc.Workloads, inflate.Name, cpu.String())
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

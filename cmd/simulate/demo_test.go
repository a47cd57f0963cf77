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

// TestChartOnNode: the demo runs the gate from its chart only given an image on a machine
// that can run a real node, and otherwise says why not.
func TestChartOnNode(t *testing.T) {
	for _, tc := range []struct {
		image, unsupported string
		want               bool
		why                string
	}{
		{image: "out/startupgate.tar", want: true},
		{image: "", why: "in the simulator's process"},
		{image: "out/startupgate.tar", unsupported: "not root", why: "cannot run a real node (not root)"},
		{image: "", unsupported: "not root", why: "in the simulator's process"},
	} {
		got, why := chartOnNode(tc.image, tc.unsupported)
		if got != tc.want || !strings.Contains(why, tc.why) || (tc.want && why != "") {
			t.Errorf("chartOnNode(%q, %q) = %v, %q; want %v, a reason with %q", tc.image, tc.unsupported, got, why, tc.want, tc.why)
		}
	}
}

// TestSplitImageRef: the chart's image.repository and image.tag from make image's name:tag,
// a registry's port left in the repository.
func TestSplitImageRef(t *testing.T) {
	for _, tc := range []struct{ ref, repo, tag string }{
		{ref: "ghcr.io/startupgate/startupgate:dev", repo: "ghcr.io/startupgate/startupgate", tag: "dev"},
		{ref: "localhost:5000/startupgate:0.1.0", repo: "localhost:5000/startupgate", tag: "0.1.0"},
		{ref: "localhost:5000/startupgate"},
		{ref: "startupgate:"},
		{ref: ":dev"},
		{ref: "ghcr.io/startupgate/startupgate@sha256:f1cbe27a"},
		{ref: ""},
	} {
		repo, tag, err := splitImageRef(tc.ref)
		if repo != tc.repo || tag != tc.tag || (err == nil) != (tc.repo != "") {
			t.Errorf("splitImageRef(%q) = %q, %q, %v; want %q, %q", tc.ref, repo, tag, err, tc.repo, tc.tag)
		}
	}
}

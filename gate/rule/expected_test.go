package rule_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// A node is not released while a required component's DaemonSet targets it but has not yet
// put its Pod there (found by the simulator's multi-component scenario: GPU nodes released
// before their driver Pod was bound).
func TestComponentExpectedByItsDaemonSetHoldsTheNode(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Components = []rule.Component{
			{Name: "init", Selector: "startup.k8s.io/component=init"},
			{Name: "gpu", Selector: "startup.k8s.io/component=gpu"},
		}
	})
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpuNode := testobj.Node("g", created, testobj.NodeLabel("gpu", "true"))
	cpuNode := testobj.Node("c", created)
	ds := func(name, component string, nodeSelector map[string]string) appsv1.DaemonSet {
		return appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": component}},
				Spec:       corev1.PodSpec{NodeSelector: nodeSelector},
			}},
		}
	}
	dss := []appsv1.DaemonSet{ds("init", "init", nil), ds("driver", "gpu", map[string]string{"gpu": "true"}), ds("other", "agent", nil)}

	tests := []struct {
		name        string
		node        *corev1.Node
		wantExpect  map[string]bool
		wantRelease bool
	}{
		{"gpu node: the driver's DaemonSet targets it, no Pod yet", gpuNode, map[string]bool{"init": true, "gpu": true}, false},
		{"cpu node: the driver's DaemonSet does not target it", cpuNode, map[string]bool{"init": true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cfg.EffectiveRules()[0].ExpectedOn(tt.node, dss)
			if len(got) != len(tt.wantExpect) || got["init"] != tt.wantExpect["init"] || got["gpu"] != tt.wantExpect["gpu"] {
				t.Fatalf("expectedOn = %v, want %v", got, tt.wantExpect)
			}
			pods := []*corev1.Pod{testobj.Pod("init-"+tt.node.Name, tt.node.Name, created.Add(time.Second), testobj.ReadyAt(created.Add(2*time.Second)))}
			d := decideExpecting(tt.node, pods, got, created.Add(time.Minute), cfg)
			if d.Release != tt.wantRelease {
				t.Errorf("DecideExpecting: release %v (%s), want %v", d.Release, d.Reason, tt.wantRelease)
			}
			// Without the DaemonSets, only the Pods on the node count: the old behaviour.
			if d := decide(tt.node, pods, created.Add(time.Minute), cfg); !d.Release {
				t.Errorf("Decide without expectations held the node: %s", d.Reason)
			}
		})
	}
}

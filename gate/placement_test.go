package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
)

// TestPlacement: a replica on a worker node (one exclude leaves) reports it once, by event
// on that node and the gauge; the Ready excluded nodes are counted (a NotReady one is not);
// once none is Ready, an event on the replica's Pod says so, once, and the gauge reads 0.
func TestPlacement(t *testing.T) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	node := func(name string, labels map[string]string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	system := node("system-0", map[string]string{"kubernetes.azure.com/mode": "system"}, corev1.ConditionTrue)
	c, _ := newFakeClient(interceptor.Funcs{}, system,
		node("system-1", map[string]string{"kubernetes.azure.com/mode": "system"}, corev1.ConditionFalse),
		node("control-0", map[string]string{"node-role.kubernetes.io/control-plane": ""}, corev1.ConditionTrue),
		node("worker-0", map[string]string{"pool": "a"}, corev1.ConditionTrue))
	rec := events.NewFakeRecorder(10)
	p := &Placement{API: c, Recorder: rec, Config: &cfg, Node: "worker-0", Pod: "startupgate-x", Namespace: "startupgate-system"}
	ctx := context.Background()

	p.check(ctx)
	p.check(ctx)
	if got := gauge(t, excludedNodesReady); got != 2 {
		t.Errorf("excluded nodes Ready: %v, want 2 (system-0, control-0)", got)
	}
	if got := gauge(t, onGatedNode); got != 1 {
		t.Errorf("on a gated node: %v, want 1", got)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], ReasonOnGatedNode) {
		t.Errorf("events %q, want one %s", got, ReasonOnGatedNode)
	}

	for _, name := range []string{"system-0", "control-0"} {
		n := getNode(t, c, name)
		n.Status.Conditions[0].Status = corev1.ConditionFalse
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	p.check(ctx)
	p.check(ctx)
	if got := gauge(t, excludedNodesReady); got != 0 {
		t.Errorf("excluded nodes Ready: %v, want 0", got)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], ReasonNoExcludedNode) {
		t.Errorf("events %q, want one %s", got, ReasonNoExcludedNode)
	}

	p.Node = "system-1" // a replica on an excluded node reports nothing of its own
	p.check(ctx)
	if got := gauge(t, onGatedNode); got != 0 {
		t.Errorf("on an excluded node: %v, want 0", got)
	}
}

func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func gauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestWarmStandby: a gate replica that does not lead keeps its cache warm, so that a
// failover reconciles at once instead of listing the whole cluster first; with
// --warm-standby=false it watches nothing until it leads. Two leader-elected cmd/gate
// processes run as deployed. The standby's release queue is what its Node watch feeds:
// warm, it has taken in at least the Node this test creates while the other replica leads;
// cold, it does not exist yet.
func TestWarmStandby(t *testing.T) {
	rc := sharedPlane(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	if _, err := gateundertest.GateBinary(); err != nil {
		t.Fatal(err)
	}
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			name := fmt.Sprintf("standby-warm-%v", warm)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scenario.Label: name}}}
			if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })

			opts := gateundertest.Options{Shipped: true, Args: []string{fmt.Sprintf("--warm-standby=%v", warm)}}
			g, leader := startGateProcesses(ctx, t, rc, cs, scenario.ScopeConfig(config.DefaultConfig(), name), name, 2, opts)
			var standby *gateundertest.Replica
			for _, r := range g.Replicas() {
				if r != leader {
					standby = r
				}
			}
			// The leader has seen the Node: the standby, started with it, had as long.
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				adds, _ := queueAdds(ctx, t, leader.MetricsURL())
				return adds >= 1, nil
			})
			if err != nil {
				t.Fatalf("the leader's release queue took in no Node: %v", err)
			}
			adds, exists := queueAdds(ctx, t, standby.MetricsURL())
			switch {
			case warm && adds < 1:
				t.Errorf("warm standby: its release queue took in %v Nodes (exists %v), want at least 1", adds, exists)
			case !warm && exists:
				t.Errorf("cold standby: its release queue exists and took in %v Nodes before it leads", adds)
			}
		})
	}
}

// queueAdds sums workqueue_adds_total of the gate's release controller on the page at url,
// and says whether that queue has a series at all.
func queueAdds(ctx context.Context, t *testing.T, url string) (float64, bool) {
	t.Helper()
	f, ok := scrapeFamilies(ctx, t, url)["workqueue_adds_total"]
	if !ok {
		return 0, false
	}
	sum, exists := 0.0, false
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == "startupgate" {
				sum += m.GetCounter().GetValue()
				exists = true
			}
		}
	}
	return sum, exists
}

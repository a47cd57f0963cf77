package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// TestUpgradeMovesNameKeyedRecords: the release before records were named after taints
// left a node re-gated after a reboot, its records under the rule's name
// (completedAt.warm_regatedAt, placed.warm, ...). The new gate's first reconcile moves them to
// the taint's record, in one write, before it decides: the node stays re-gated (not a first
// hold timed out at once, nor an unmarked taint), and is released once Ready on the new boot.
func TestUpgradeMovesNameKeyedRecords(t *testing.T) {
	cfg := withRule(t, rebootConfig(t), func(r *rule.Rule) {
		r.Name, r.MaxHold = "warm", metav1.Duration{Duration: 9 * time.Second}
	})
	e := regatedOnB2(t, cfg)
	rl := cfg.EffectiveRules()[0]
	n := getNode(t, e.c, "n")
	for k, v := range n.Annotations {
		legacy := ""
		switch {
		case strings.HasPrefix(k, config.DefaultCompletedAnnotation):
			legacy = config.DefaultCompletedAnnotation + ".warm" + strings.TrimPrefix(k, config.DefaultCompletedAnnotation)
		case k == rl.PlacedAnnotation:
			legacy = rule.DefaultPlacedAnnotation + ".warm"
		default:
			continue
		}
		delete(n.Annotations, k)
		n.Annotations[legacy] = v
	}
	if err := e.c.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if !cfg.Legacy(getNode(t, e.c, "n")) {
		t.Fatalf("setup: annotations %v read as no earlier release's", n.Annotations)
	}
	e.clock.Step(5 * time.Second) // within maxHold of the re-gate, long past the Node's creation + maxHold
	settle(t, e, "n")
	n = getNode(t, e.c, "n")
	if cfg.Legacy(n) || !rl.HasTaint(n) || !rl.Regated(n) {
		t.Fatalf("after the upgrade's reconcile: taints %v, annotations %v; want the records moved and the node re-gated", n.Spec.Taints, n.Annotations)
	}
	restartInit(t, e.c, "init-n", true, e.clock.Now())
	settle(t, e, "n")
	if n := getNode(t, e.c, "n"); rl.HasTaint(n) || n.Annotations[rl.BootAnnotation()] != "b2" {
		t.Errorf("ready on b2: taints %v, annotations %v; want released on boot b2", n.Spec.Taints, n.Annotations)
	}
}

package step

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/scenario"
)

// initPod changes init Pods after their timeline, through the fake kubelet (readiness) or
// the API (deletion: the DaemonSet controller creates a new Pod).
type initPod struct{ *scenario.InitPod }

// Run sets the Pods unready or ready, deletes them, or flaps them for Duration.
func (ip initPod) Run(ctx context.Context, env Env) error {
	set := func(ready bool) error {
		n, err := env.Kubelet().SetInitReady(ip.Name, ip.Nodes, ready)
		env.Note("initPod %s: %d Pods ready=%v", ip.Name, n, ready)
		return err
	}
	switch ip.State {
	case scenario.InitPodUnready:
		return set(false)
	case scenario.InitPodReady:
		return set(true)
	case scenario.InitPodDelete:
		return ip.delete(ctx, env)
	}
	// Flap: unready and ready in turn, each state held for Every once written, then ready
	// for good. Each unready spell lasts Every plus one write, however slow the plane.
	end := time.Now().Add(ip.Duration)
	for ready := false; time.Now().Before(end); ready = !ready {
		if err := set(ready); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(ip.Every):
		}
	}
	return set(true)
}

// delete deletes the init DaemonSet's Pods on the step's nodes (every node when none is
// named).
func (ip initPod) delete(ctx context.Context, c Cluster) error {
	for _, in := range c.Scenario().Init {
		if in.Name != ip.Name {
			continue
		}
		sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: in.Labels})
		if len(ip.Nodes) == 0 {
			return deletePods(ctx, c, metav1.ListOptions{LabelSelector: sel})
		}
		for _, node := range ip.Nodes {
			if err := deletePods(ctx, c, metav1.ListOptions{LabelSelector: sel, FieldSelector: "spec.nodeName=" + node}); err != nil {
				return err
			}
		}
	}
	return nil
}

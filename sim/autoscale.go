package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/autoscaler"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// A scenario with an autoscaler section gets its nodes from Karpenter's KWOK provider, run
// by sim/autoscaler; this file hands it the scenario's parts.

// startAutoscaler starts Karpenter with the scenario's instance types, on the embedded
// plane: it runs out of cluster and needs the plane's kubeconfig file.
func (rn *run) startAutoscaler(ctx context.Context) error {
	if rn.Opts.Plane == nil {
		return fmt.Errorf("scenario %s runs Karpenter: it needs the embedded backend", rn.sc.Name)
	}
	var types []autoscaler.InstanceType
	for _, it := range rn.sc.Autoscaler.Karpenter.InstanceTypes {
		types = append(types, autoscaler.InstanceType{Name: it.Name, CPU: resource.MustParse(it.CPU), Memory: resource.MustParse(it.Memory), Pods: it.Pods})
	}
	a, err := autoscaler.StartRun(ctx, rn.Config, rn.client, autoscaler.Options{Kubeconfig: rn.Opts.Plane.Kubeconfig(), LogDir: rn.Opts.Plane.LogDir, InstanceTypes: types})
	rn.autoscale = a
	return err
}

// launchAutoscaler creates the scenario's KWOKNodeClass and NodePool, both named after it,
// and starts counting the NodePool's NodeClaims.
func (rn *run) launchAutoscaler(ctx context.Context) error {
	k := rn.sc.Autoscaler.Karpenter
	pool := autoscaler.NodePool{Name: rn.sc.Name, NodeClass: rn.sc.Name, Labels: map[string]string{scenario.Label: rn.sc.Name},
		StartupTaints: coreTaints(k.StartupTaints), Taints: coreTaints(k.Taints), ConsolidationPolicy: k.Consolidation.Policy}
	if k.Consolidation.After > 0 {
		pool.ConsolidateAfter = &k.Consolidation.After
	}
	pause := slices.ContainsFunc(rn.sc.Timeline, func(s scenario.Step) bool { return s.PauseAutoscaler != nil })
	if err := rn.autoscale.Launch(ctx, pool, pause); err != nil {
		return err
	}
	rn.Note("NodePool %s created; Karpenter's log: %s", rn.sc.Name, rn.autoscale.Karpenter.Log())
	return nil
}

// nodeClaims are the NodeClaims counted so far, for the checker.
func (rn *run) nodeClaims() []check.NodeClaim {
	if rn.autoscale == nil {
		return nil
	}
	var out []check.NodeClaim
	for _, c := range rn.autoscale.Claims() {
		out = append(out, check.NodeClaim{Name: c.Name, Created: c.Seen})
	}
	return out
}

// stopAutoscaler stops Karpenter, so that it launches nothing more while the run is
// cleared.
func (rn *run) stopAutoscaler() {
	if a := rn.autoscale; a != nil {
		rn.Fail(a.Karpenter.Exited())
		rn.Fail(a.Stop())
	}
}

// clearAutoscaler removes the scenario's NodePool, NodeClass and NodeClaims (the Nodes go
// with the scenario's other Nodes).
func (rn *run) clearAutoscaler(ctx context.Context) error {
	if rn.sc.Autoscaler == nil {
		return nil
	}
	return autoscaler.Clear(ctx, rn.Config, rn.client, rn.sc.Name)
}

func coreTaints(ts []scenario.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		out = append(out, t.Core())
	}
	return out
}

// settleAfterClaims holds a Karpenter run from settling until its last NodeClaim is this old:
// Karpenter batches pending Pods for up to 10 s before it launches, so a redundant launch
// shows within that much of the nodes it doubts.
const settleAfterClaims = 15 * time.Second

// noteWaits adds the workload Pods' waits, pending to Running, to the run's notes.
func (rn *run) noteWaits(ctx context.Context) {
	list, err := rn.client.CoreV1().Pods(rn.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		rn.Note("cannot list the workload Pods for their waits: %v", err)
		return
	}
	waits := check.PendingToRunning(list.Items)
	p := check.PercentilesOf(waits)
	rn.Note("workload Pods pending to Running: p50 %.0fs, p99 %.0fs, max %.0fs (%d Pods, 1 s resolution)", p.P50/1000, p.P99/1000, p.Max/1000, len(waits))
}

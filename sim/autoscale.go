package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/autoscaler"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// A scenario with an autoscaler section gets its nodes from Karpenter's KWOK provider: the
// run starts it before its clock starts (its build and its caches are set-up, not the
// scenario's time), creates the scenario's NodePool when the clock starts (the moment the
// pending Pods meet an autoscaler), and counts the NodeClaims from then on.

// autoscale is a run's Karpenter and what it watches.
type autoscale struct {
	karpenter *autoscaler.Karpenter
	dyn       dynamic.Interface
	claims    *autoscaler.Claims
	pause     *registrationPause // nil: no pauseAutoscaler step
}

// startAutoscaler starts Karpenter with the scenario's instance types, on the embedded
// plane: it runs out of cluster and needs the plane's kubeconfig file.
func (rn *run) startAutoscaler(ctx context.Context) error {
	k := rn.sc.Autoscaler.Karpenter
	if rn.Opts.Plane == nil {
		return fmt.Errorf("scenario %s runs Karpenter: it needs the embedded backend", rn.sc.Name)
	}
	var types []autoscaler.InstanceType
	for _, it := range k.InstanceTypes {
		types = append(types, autoscaler.InstanceType{Name: it.Name, CPU: resource.MustParse(it.CPU), Memory: resource.MustParse(it.Memory), Pods: it.Pods})
	}
	dyn, err := dynamic.NewForConfig(rn.Config)
	if err != nil {
		return err
	}
	kp, err := autoscaler.Start(ctx, autoscaler.Options{Kubeconfig: rn.Opts.Plane.Kubeconfig(), LogDir: rn.Opts.Plane.LogDir, InstanceTypes: types})
	if err != nil {
		return err
	}
	rn.autoscale = &autoscale{karpenter: kp, dyn: dyn}
	return nil
}

// launchAutoscaler creates the scenario's KWOKNodeClass and NodePool, both named after it,
// and starts counting the NodePool's NodeClaims.
func (rn *run) launchAutoscaler(ctx context.Context) error {
	a, k := rn.autoscale, rn.sc.Autoscaler.Karpenter
	claims, err := autoscaler.WatchClaims(ctx, a.dyn, rn.sc.Name)
	if err != nil {
		return err
	}
	a.claims = claims
	for _, s := range rn.sc.Timeline {
		if s.PauseAutoscaler != nil && a.pause == nil {
			if a.pause, err = rn.startRegistrationPause(ctx, a.karpenter.Pause); err != nil {
				return err
			}
		}
	}
	pool := autoscaler.NodePool{Name: rn.sc.Name, NodeClass: rn.sc.Name, Labels: map[string]string{scenario.Label: rn.sc.Name},
		StartupTaints: coreTaints(k.StartupTaints), Taints: coreTaints(k.Taints), ConsolidationPolicy: k.Consolidation.Policy}
	if k.Consolidation.After > 0 {
		pool.ConsolidateAfter = &k.Consolidation.After
	}
	obj, err := pool.Object()
	if err != nil {
		return err
	}
	if _, err := a.dyn.Resource(autoscaler.KWOKNodeClasses).Create(ctx, autoscaler.NodeClass(rn.sc.Name, 0), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating KWOKNodeClass %s: %w", rn.sc.Name, err)
	}
	if _, err := a.dyn.Resource(autoscaler.NodePools).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating NodePool %s: %w", rn.sc.Name, err)
	}
	rn.note("NodePool %s created; Karpenter's log: %s", rn.sc.Name, a.karpenter.Log())
	return nil
}

// nodeClaims are the NodeClaims counted so far, for the checker.
func (rn *run) nodeClaims() []check.NodeClaim {
	if rn.autoscale == nil || rn.autoscale.claims == nil {
		return nil
	}
	var out []check.NodeClaim
	for _, c := range rn.autoscale.claims.All() {
		out = append(out, check.NodeClaim{Name: c.Name, Created: c.Seen})
	}
	return out
}

// stopAutoscaler stops Karpenter, so that it launches nothing more while the run is
// cleared.
func (rn *run) stopAutoscaler() {
	a := rn.autoscale
	if a == nil {
		return
	}
	rn.fail(a.karpenter.Exited())
	a.karpenter.Stop()
	if a.pause != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rn.fail(a.pause.stop(ctx, rn.client))
		a.pause = nil
	}
}

// clearAutoscaler removes the scenario's NodePool, NodeClass and NodeClaims, with
// Karpenter stopped: nothing is left to remove their finalizers, so it takes them off (the
// Nodes go with the scenario's other Nodes). It runs before a run too, for the leftovers
// of one that was killed.
func (rn *run) clearAutoscaler(ctx context.Context) error {
	if rn.sc.Autoscaler == nil {
		return nil
	}
	dyn, err := dynamic.NewForConfig(rn.Config)
	if err != nil {
		return err
	}
	var errs []error
	for _, gvr := range []struct {
		res  dynamic.NamespaceableResourceInterface
		name string
	}{{dyn.Resource(autoscaler.NodePools), rn.sc.Name}, {dyn.Resource(autoscaler.KWOKNodeClasses), rn.sc.Name}} {
		errs = append(errs, client.IgnoreNotFound(gvr.res.Delete(ctx, gvr.name, metav1.DeleteOptions{})))
	}
	claims, err := dyn.Resource(autoscaler.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: autoscaler.NodePoolLabel + "=" + rn.sc.Name})
	if err != nil {
		return errors.Join(append(errs, client.IgnoreNotFound(err))...)
	}
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	for _, c := range claims.Items {
		res := dyn.Resource(autoscaler.NodeClaims)
		errs = append(errs, client.IgnoreNotFound(res.Delete(ctx, c.GetName(), metav1.DeleteOptions{})))
		_, err := res.Patch(ctx, c.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{})
		errs = append(errs, client.IgnoreNotFound(err))
	}
	nodes, err := rn.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: autoscaler.NodePoolLabel + "=" + rn.sc.Name})
	if err == nil {
		for _, n := range nodes.Items {
			if len(n.Finalizers) > 0 {
				_, err := rn.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
				errs = append(errs, client.IgnoreNotFound(err))
			}
		}
	}
	return errors.Join(append(errs, client.IgnoreNotFound(err))...)
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
		rn.note("cannot list the workload Pods for their waits: %v", err)
		return
	}
	waits := check.PendingToRunning(list.Items)
	p := check.PercentilesOf(waits)
	rn.note("workload Pods pending to Running: p50 %.0fs, p99 %.0fs, max %.0fs (%d Pods, 1 s resolution)", p.P50/1000, p.P99/1000, p.Max/1000, len(waits))
}

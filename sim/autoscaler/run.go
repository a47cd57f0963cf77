package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Run is Karpenter as a part of one simulator run's plane: started before the run's clock
// starts (its build and its caches are set-up, not the scenario's time), launched when the
// clock starts (the moment the pending Pods meet an autoscaler) and counting its NodePool's
// NodeClaims from then on, stopped before the run is judged.
type Run struct {
	Karpenter *Karpenter
	client    kubernetes.Interface
	dyn       dynamic.Interface
	claims    *Claims
	// Pause stops Karpenter inside a Node CREATE (nil: not asked for at launch).
	Pause *RegistrationPause
}

// StartRun starts Karpenter (Start) for a run on the plane at rc.
func StartRun(ctx context.Context, rc *rest.Config, c kubernetes.Interface, o Options) (*Run, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	k, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Run{Karpenter: k, client: c, dyn: dyn}, nil
}

// Launch starts counting pool's NodeClaims, serves the registration pause for pool's Nodes
// if pause is set, and creates pool and its KWOKNodeClass, which is named after it.
func (r *Run) Launch(ctx context.Context, pool NodePool, pause bool) error {
	claims, err := WatchClaims(ctx, r.dyn, pool.Name)
	if err != nil {
		return err
	}
	r.claims = claims
	if pause {
		if r.Pause, err = r.Karpenter.PauseAtRegistration(ctx, r.client, "startupgate-sim-pause-"+pool.Name, pool.Labels); err != nil {
			return err
		}
	}
	obj, err := pool.Object()
	if err != nil {
		return err
	}
	if _, err := r.dyn.Resource(KWOKNodeClasses).Create(ctx, NodeClass(pool.NodeClass, 0), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating KWOKNodeClass %s: %w", pool.NodeClass, err)
	}
	if _, err := r.dyn.Resource(NodePools).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating NodePool %s: %w", pool.Name, err)
	}
	return nil
}

// Claims are the NodeClaims counted so far (none before Launch).
func (r *Run) Claims() []Claim {
	if r.claims == nil {
		return nil
	}
	return r.claims.All()
}

// Stop stops Karpenter, so that it launches nothing more while the run is cleared, and
// removes the registration pause; it returns the pause's error (Karpenter.Exited tells how
// Karpenter fared).
func (r *Run) Stop() error {
	r.Karpenter.Stop()
	if r.Pause == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.Pause.Stop(ctx)
	r.Pause = nil
	return err
}

// Clear removes the NodePool name, the KWOKNodeClass of that name and the NodePool's
// NodeClaims, with Karpenter stopped: nothing is left to remove their finalizers, so it takes
// them off, and off the NodePool's Nodes, which the caller deletes. It runs before a run
// too, for the leftovers of one that was killed.
func Clear(ctx context.Context, rc *rest.Config, c kubernetes.Interface, name string) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	var errs []error
	for _, gvr := range []struct {
		res  dynamic.NamespaceableResourceInterface
		name string
	}{{dyn.Resource(NodePools), name}, {dyn.Resource(KWOKNodeClasses), name}} {
		errs = append(errs, client.IgnoreNotFound(gvr.res.Delete(ctx, gvr.name, metav1.DeleteOptions{})))
	}
	claims, err := dyn.Resource(NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: NodePoolLabel + "=" + name})
	if err != nil {
		return errors.Join(append(errs, client.IgnoreNotFound(err))...)
	}
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	for _, cl := range claims.Items {
		res := dyn.Resource(NodeClaims)
		errs = append(errs, client.IgnoreNotFound(res.Delete(ctx, cl.GetName(), metav1.DeleteOptions{})))
		_, err := res.Patch(ctx, cl.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{})
		errs = append(errs, client.IgnoreNotFound(err))
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodePoolLabel + "=" + name})
	if err == nil {
		for _, n := range nodes.Items {
			if len(n.Finalizers) > 0 {
				_, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
				errs = append(errs, client.IgnoreNotFound(err))
			}
		}
	}
	return errors.Join(append(errs, client.IgnoreNotFound(err))...)
}

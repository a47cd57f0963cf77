package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Run is one scenario run's objects on the plane: those in its namespace, and its
// scenario's nodes.
type Run struct {
	Client    kubernetes.Interface
	Namespace string
	Scenario  *scenario.Scenario
}

// Create creates the namespace, the DaemonSets and the pending workloads (of which cfg
// holds the gate's rules).
func (o Run) Create(ctx context.Context, cfg *config.Config) error {
	cs := o.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{scenario.Label: o.Scenario.Name}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	// The init DaemonSets tolerate every rule's taint, and the new key a step gives a rule:
	// operations.md has the toleration rolled out with the key, and a DaemonSet that does
	// not tolerate it never reaches a node whose Pod was not placed before the new key went
	// on, a race the scenario would lose on a loaded plane.
	var taints []corev1.Taint
	for _, r := range cfg.EffectiveRules() {
		taints = append(taints, r.Taint)
	}
	taints = append(taints, o.Scenario.EditTaints(cfg.EffectiveRules())...)
	for _, ds := range o.Scenario.DaemonSetObjects(o.Namespace, taints) {
		if _, err := cs.AppsV1().DaemonSets(o.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating daemonset %s: %w", ds.Name, err)
		}
	}
	want := 0
	for _, w := range o.Scenario.Workloads {
		if w.Kind == scenario.KindStatefulSet {
			if _, err := cs.AppsV1().StatefulSets(o.Namespace).Create(ctx, o.Scenario.StatefulSet(o.Namespace, w), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating statefulset %s: %w", w.Name, err)
			}
			continue // its controller creates a Pod at a time
		}
		if _, err := cs.AppsV1().Deployments(o.Namespace).Create(ctx, o.Scenario.Deployment(o.Namespace, w), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating deployment %s: %w", w.Name, err)
		}
		want += int(w.Replicas)
	}
	// Workloads are pending before the first join: wait until every replica exists. The
	// ReplicaSets count their Pods, so this costs one small list, not a list of every Pod.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		rss, err := cs.AppsV1().ReplicaSets(o.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have := 0
		for _, rs := range rss.Items {
			have += int(rs.Status.Replicas)
		}
		return have >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pending workload Pods: %w", want, err)
	}
	return nil
}

// Delete removes everything the scenario created and waits until its nodes are gone.
func (o Run) Delete(ctx context.Context) error {
	cs := o.Client
	sel := metav1.ListOptions{LabelSelector: scenario.Label + "=" + o.Scenario.Name}
	all := metav1.ListOptions{}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}
	errs := []error{
		client.IgnoreNotFound(cs.AppsV1().Deployments(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all)),
		client.IgnoreNotFound(cs.AppsV1().StatefulSets(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all)),
		client.IgnoreNotFound(cs.AppsV1().DaemonSets(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all)),
		client.IgnoreNotFound(cs.AppsV1().ReplicaSets(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, all)),
		client.IgnoreNotFound(cs.CoreV1().Pods(o.Namespace).DeleteCollection(ctx, now, all)),
		cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel),
		cs.CoordinationV1().Leases(kubelet.LeaseNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel),
	}
	// The namespace controller finishes the rest; node names are reused, so wait for those.
	nss, err := cs.CoreV1().Namespaces().List(ctx, sel)
	errs = append(errs, err)
	if err == nil {
		for _, ns := range nss.Items {
			errs = append(errs, client.IgnoreNotFound(cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, sel)
		return err == nil && len(nodes.Items) == 0, err
	})
	if err != nil {
		return err
	}
	return o.deleteNodeEvents(ctx)
}

// deleteNodeEvents deletes the Events about the scenario's Nodes. They land in "default",
// which outlives the run's namespace and where the apiserver keeps no watch cache for
// Events: every List there (CountEvents, once a second while an expected Event is missing)
// reads all of them from etcd. Left in place until their hour's TTL, a soak's runs filled
// "default" with 50,000 to 73,000 Events, and four of 1,024 runs failed when a List
// outlived its 10 s bound. The cleanup before a run also takes the previous run's late ones
// (the controller-manager reports a Node's removal after it is gone). No other run has
// these names: one run per scenario at a time on a plane (a sim.Runner refuses a second),
// and NodeNames is exact.
func (o Run) deleteNodeEvents(ctx context.Context) error {
	events := o.Client.EventsV1().Events(metav1.NamespaceDefault)
	list, err := events.List(ctx, metav1.ListOptions{FieldSelector: "regarding.kind=Node"})
	if err != nil {
		return fmt.Errorf("listing Node events: %w", err)
	}
	nodes := o.Scenario.NodeNames()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, e := range list.Items {
		if nodes[e.Regarding.Name] {
			g.Go(func() error {
				return client.IgnoreNotFound(events.Delete(gctx, e.Name, metav1.DeleteOptions{}))
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("deleting Node events: %w", err)
	}
	return nil
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The Kubernetes objects a scenario creates, and their removal.

// setup creates the namespace, the DaemonSets and the pending workloads.
func (x *run) setup(ctx context.Context) error {
	cs := x.client
	lbl := map[string]string{ScenarioLabel: x.sc.Name}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: x.ns, Labels: lbl}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	taintToleration := corev1.Toleration{Key: x.cfg.Taint.Key, Operator: corev1.TolerationOpExists, Effect: x.cfg.Taint.Effect}
	for _, in := range x.sc.Init {
		var tols []corev1.Toleration
		if *in.Tolerate {
			tols = append(tols, taintToleration)
		}
		// As deploy/startup-daemonset.yaml: init Pods schedule ahead of pending workloads.
		if err := x.daemonSet(ctx, in.Name, in.Labels, in.NodeSelector, tols, "system-node-critical"); err != nil {
			return err
		}
	}
	for _, d := range x.sc.DaemonSets {
		tols := make([]corev1.Toleration, 0, len(d.Tolerations))
		for _, t := range d.Tolerations {
			tols = append(tols, t.core())
		}
		if err := x.daemonSet(ctx, d.Name, map[string]string{"sim.startupgate.io/daemonset": d.Name}, nil, tols, ""); err != nil {
			return err
		}
	}
	want := 0
	for _, w := range x.sc.Workloads {
		if err := x.deployment(ctx, w); err != nil {
			return err
		}
		want += int(w.Replicas)
		x.replicas[w.Name] = w.Replicas
	}
	// Workloads are pending before the first join: wait until every replica exists. The
	// ReplicaSets count their Pods, so this costs one small list, not a list of every Pod.
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		rss, err := cs.AppsV1().ReplicaSets(x.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have := 0
		for _, rs := range rss.Items {
			have += int(rs.Status.Replicas)
		}
		return have >= want, nil
	})
}

func (x *run) podSpec(nodeSelector map[string]string, tols []corev1.Toleration, cpu, priorityClass string) corev1.PodSpec {
	sel := map[string]string{ScenarioLabel: x.sc.Name}
	for k, v := range nodeSelector {
		sel[k] = v
	}
	c := corev1.Container{Name: "main", Image: "registry.k8s.io/pause:3.10"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return corev1.PodSpec{NodeSelector: sel, Tolerations: tols, Containers: []corev1.Container{c},
		TerminationGracePeriodSeconds: ptr.To(int64(0)), PriorityClassName: priorityClass}
}

func (x *run) daemonSet(ctx context.Context, name string, podLabels, nodeSelector map[string]string, tols []corev1.Toleration, priorityClass string) error {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: x.ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       x.podSpec(nodeSelector, tols, "", priorityClass),
			},
		},
	}
	if _, err := x.client.AppsV1().DaemonSets(x.ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating daemonset %s: %w", name, err)
	}
	return nil
}

func (x *run) deployment(ctx context.Context, w Workload) error {
	lbl := map[string]string{"sim.startupgate.io/workload": w.Name}
	tols := make([]corev1.Toleration, 0, len(w.Tolerations))
	for _, t := range w.Tolerations {
		tols = append(tols, t.core())
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: x.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: x.podSpec(nil, tols, w.CPU, "")},
		},
	}
	if _, err := x.client.AppsV1().Deployments(x.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating deployment %s: %w", w.Name, err)
	}
	return nil
}

// cleanup removes everything the scenario created and waits until its nodes are gone.
func (x *run) cleanup(ctx context.Context) error {
	cs := x.client
	sel := metav1.ListOptions{LabelSelector: ScenarioLabel + "=" + x.sc.Name}
	var errs []error
	if err := cs.AppsV1().Deployments(x.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, err)
	}
	if err := cs.AppsV1().DaemonSets(x.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, err)
	}
	if err := cs.AppsV1().ReplicaSets(x.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, err)
	}
	if err := cs.CoreV1().Pods(x.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, err)
	}
	if err := cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, err)
	}
	if err := cs.CoordinationV1().Leases(leaseNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, err)
	}
	// The namespace controller finishes the rest; node names are reused, so wait for those.
	nss, err := cs.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, ns := range nss.Items {
			if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return poll(ctx, time.Minute, func() (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, sel)
		return err == nil && len(nodes.Items) == 0, err
	})
}

package scenario

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Label marks every node and object of a scenario, so that scenarios sharing a plane never
// see each other's nodes.
const Label = "sim.startupgate.io/scenario"

// pauseImage is never pulled: the fake kubelet runs no container.
const pauseImage = "registry.k8s.io/pause:3.10"

// DaemonSetObjects are the DaemonSets the scenario creates in namespace ns: each init
// DaemonSet (tolerating every startup taint unless told not to — at creation a node may
// carry every rule's taint — at system-node-critical as deploy/startup-daemonset.yaml, so
// that init Pods schedule ahead of pending workloads), then the other DaemonSets.
func (sc *Scenario) DaemonSetObjects(ns string, startupTaints []corev1.Taint) []*appsv1.DaemonSet {
	var tolerateStartup []corev1.Toleration
	for _, t := range startupTaints {
		tolerateStartup = append(tolerateStartup, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpExists, Effect: t.Effect})
	}
	var out []*appsv1.DaemonSet
	for _, in := range sc.Init {
		var tols []corev1.Toleration
		if *in.Tolerate {
			tols = append(tols, tolerateStartup...)
		}
		tols = append(tols, coreTolerations(in.Tolerations)...)
		out = append(out, sc.daemonSet(ns, in.Name, in.Labels, in.NodeSelector, tols, "system-node-critical"))
	}
	for _, d := range sc.DaemonSets {
		out = append(out, sc.daemonSet(ns, d.Name, map[string]string{"sim.startupgate.io/daemonset": d.Name}, nil, coreTolerations(d.Tolerations), ""))
	}
	return out
}

// Deployment is workload w as a Deployment of pause Pods pinned to the scenario's nodes.
func (sc *Scenario) Deployment(ns string, w Workload) *appsv1.Deployment {
	lbl := map[string]string{"sim.startupgate.io/workload": w.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: sc.PodSpec(nil, coreTolerations(w.Tolerations), w.CPU, "")},
		},
	}
}

// StatefulSet is a StatefulSet of pause Pods with a grace period of 30s: deleted on a dead
// node, one stays Terminating until it is force-deleted, and its replacement (same name)
// waits for that.
func (sc *Scenario) StatefulSet(ns string, w Workload) *appsv1.StatefulSet {
	lbl := map[string]string{"sim.startupgate.io/workload": w.Name}
	spec := sc.PodSpec(nil, coreTolerations(w.Tolerations), w.CPU, "")
	spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(w.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: spec},
		},
	}
}

// PodSpec is a pause Pod that can land only on the scenario's nodes (and those matching
// nodeSelector), requesting cpu if set.
func (sc *Scenario) PodSpec(nodeSelector map[string]string, tols []corev1.Toleration, cpu, priorityClass string) corev1.PodSpec {
	sel := map[string]string{Label: sc.Name}
	for k, v := range nodeSelector {
		sel[k] = v
	}
	c := corev1.Container{Name: "main", Image: pauseImage}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return corev1.PodSpec{NodeSelector: sel, Tolerations: tols, Containers: []corev1.Container{c},
		TerminationGracePeriodSeconds: ptr.To(int64(0)), PriorityClassName: priorityClass}
}

func (sc *Scenario) daemonSet(ns, name string, podLabels, nodeSelector map[string]string, tols []corev1.Toleration, priorityClass string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       sc.PodSpec(nodeSelector, tols, "", priorityClass),
			},
		},
	}
}

func coreTolerations(ts []Toleration) []corev1.Toleration {
	out := make([]corev1.Toleration, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Core())
	}
	return out
}

// SetNodeCondition applies a nodeCondition step to a node's conditions: it sets the
// condition (its transition time moves only when its status changes), or removes it.
func SetNodeCondition(conds []corev1.NodeCondition, c *NodeCondition, now metav1.Time) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(conds)+1)
	found := false
	for _, nc := range conds {
		if string(nc.Type) != c.Type {
			out = append(out, nc)
			continue
		}
		found = true
		if c.Clear {
			continue
		}
		if string(nc.Status) != c.Status {
			nc.LastTransitionTime = now
		}
		nc.Status, nc.Reason, nc.LastHeartbeatTime = corev1.ConditionStatus(c.Status), c.Reason, now
		out = append(out, nc)
	}
	if !found && !c.Clear {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
			Reason: c.Reason, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	return out
}

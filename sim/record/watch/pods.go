package watch

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

func (r *Recorder) pod(p *corev1.Pod) {
	m := record.Mark{RV: rv(p), Time: time.Now()}
	maxStore(&r.podRV, m.RV)
	if p.Spec.NodeName == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.pods[string(p.UID)]
	if seen == nil {
		// A Pod belongs to the node incarnation it was first seen bound to: a stale init Pod
		// of a deleted node stays with that node and never counts for its successor.
		rec := r.incarnation(p.Spec.NodeName, m.RV)
		if rec == nil {
			return
		}
		comp := r.componentOf(p)
		seen = &podSeen{node: rec, init: comp != "", component: comp, binding: len(rec.Bindings)}
		r.pods[string(p.UID)] = seen
		rec.Bindings = append(rec.Bindings, record.Binding{
			Pod: p.Namespace + "/" + p.Name, Mark: m, Tolerates: r.config().Tolerates(p.Spec.Tolerations), Init: seen.init,
			Stateful: ownedBy(p, "StatefulSet"), Bypass: p.Labels[record.BypassLabel] == "true",
		})
		if seen.init {
			rec.inits = append(rec.inits, seen)
		}
	}
	r.podState(seen, p, m)
	if !seen.init {
		return
	}
	seen.ready = record.PodIsReady(p, r.config())
	seen.wasReady = seen.wasReady || seen.ready
	seen.initState(p, m)
	rec := seen.node
	if rec.InitReady.IsZero() && allReady(rec, r.continuous) {
		rec.InitReady = m
	}
	r.continuousWindow(rec, m)
}

// podState records when a Pod first runs, and its eviction by the taint-eviction
// controller (which marks the Pod with a DisruptionTarget condition before it deletes it).
func (r *Recorder) podState(seen *podSeen, p *corev1.Pod, m record.Mark) {
	b := &seen.node.Bindings[seen.binding]
	if b.Running.IsZero() && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		b.Running = m
	}
	if seen.evicted {
		return
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByTaintManager" {
			seen.evicted = true
			seen.node.Evictions = append(seen.node.Evictions, record.Eviction{Pod: b.Pod, Mark: m})
		}
	}
}

func ownedBy(p *corev1.Pod, kind string) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == kind
}

// podDeleted: a deleted init Pod no longer counts; while its DaemonSet targets the node,
// its component is unready until a new Pod is.
func (r *Recorder) podDeleted(o any) {
	p, ok := deletedObject[*corev1.Pod](o)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if seen := r.pods[string(p.UID)]; seen != nil && seen.init {
		seen.ready, seen.gone = false, true
		r.continuousWindow(seen.node, record.Mark{RV: rv(p), Time: time.Now()})
	}
}

// continuousWindow opens or closes the node's unready window: after its release, whether
// every continuous component that targets it has a ready Pod.
func (r *Recorder) continuousWindow(rec *nodeState, m record.Mark) {
	if rec.Released.IsZero() || len(r.continuous) == 0 {
		return
	}
	ready := true
	for _, comp := range rec.Components {
		if !r.continuous[comp] {
			continue
		}
		ok := false
		for _, p := range rec.inits {
			ok = ok || (p.component == comp && p.ready && !p.gone)
		}
		ready = ready && ok
	}
	open := len(rec.Unready) > 0 && rec.Unready[len(rec.Unready)-1].To.IsZero()
	switch {
	case !ready && !open:
		rec.Unready = append(rec.Unready, record.Window{From: m})
	case ready && open:
		rec.Unready[len(rec.Unready)-1].To = m
	}
}

// allReady: every component that targets the node has a ready Pod on it — or, for a
// continuous one, has had one. A continuous component that goes unready after that is its
// own rule's to taint again (judged by its unready windows), not a sign that the node's
// startup release came too early: under load, a startup rule's release can come after a
// continuous component, ready and released first, has already gone unready.
func allReady(rec *nodeState, continuous map[string]bool) bool {
	for _, comp := range rec.Components {
		ok := false
		for _, p := range rec.inits {
			ok = ok || (p.component == comp && (p.ready || continuous[comp] && p.wasReady))
		}
		if !ok {
			return false
		}
	}
	return len(rec.Components) > 0
}

// components lists the init DaemonSets whose nodeSelector matches the node's labels; once
// a step edited the gate's rules, only those a rule in force requires.
func (r *Recorder) components(nodeLabels map[string]string) []string {
	var out []string
	for _, in := range r.init {
		if labels.SelectorFromSet(in.NodeSelector).Matches(labels.Set(nodeLabels)) && (!r.edited || r.required(in)) {
			out = append(out, in.Name)
		}
	}
	return out
}

// required reports whether a rule in force, one that holds nodes, has a component whose
// Pods are the init DaemonSet's.
func (r *Recorder) required(in scenario.InitDaemonSet) bool {
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Labels = in.Labels
	for _, rl := range r.config().Gating() {
		if rl.ComponentOf(ds) != "" {
			return true
		}
	}
	return false
}

// componentOf names the init DaemonSet a Pod belongs to, or "".
func (r *Recorder) componentOf(p *corev1.Pod) string {
	for _, in := range r.init {
		if labels.SelectorFromSet(in.Labels).Matches(labels.Set(p.Labels)) {
			return in.Name
		}
	}
	return ""
}

// incarnation is the record of the node that had this name when the write at rv happened:
// the latest one created at or before it.
func (r *Recorder) incarnation(name string, at uint64) *nodeState {
	uids := r.byName[name]
	for i := len(uids) - 1; i >= 0; i-- {
		if rec := r.nodes[uids[i]]; rec.Created.RV <= at || i == 0 {
			return rec
		}
	}
	return nil
}

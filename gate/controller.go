package gate

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Event reasons, one per state change of a node.
const (
	ReasonHeld               = "StartupGateHeld"
	ReasonReleased           = "StartupGateReleased"
	ReasonTimedOut           = "StartupGateTimedOut"
	ReasonBackfilled         = "StartupGateBackfilled"
	ReasonBackfillUndone     = "StartupGateBackfillUndone"
	ReasonMissingToleration  = "StartupGateMissingToleration"
	podNodeNameField         = "spec.nodeName"
	eventActionGate          = "Gate"
	eventActionRelease       = "Release"
	eventActionBackfill      = "Backfill"
	eventActionCheckTolerate = "CheckToleration"
)

// Reconciler releases gated nodes: fetch, decide, act. It holds no state that matters for
// correctness; everything lives in the Node (taint + annotation), so a restart loses
// nothing. The small in-memory table only deduplicates events and feeds the gauge.
type Reconciler struct {
	Client   client.Client // cached: Nodes and the init Pods only
	Writer   *NodeWriter
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Config   *Config
	// Backfill, when set, taints idle nodes that came up without the taint.
	Backfill *Backfiller

	mu    sync.Mutex
	nodes map[string]*nodeState
}

type nodeState struct {
	uid      string
	timedOut bool
}

// Reconcile handles one node.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		r.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Excluded and released nodes are never touched: not by release, not by backfill. An
	// excluded node that carries the taint anyway (registered with it by hand) is the
	// operator's to release (`gate release NODE`).
	if !r.Config.Gated(node) || r.Config.Released(node) {
		r.forget(node.Name)
		return reconcile.Result{}, nil
	}
	if !r.Config.HasTaint(node) {
		r.forget(node.Name)
		if r.Backfill != nil {
			return reconcile.Result{}, r.Backfill.Node(ctx, node)
		}
		return reconcile.Result{}, nil
	}

	state := r.track(ctx, node)
	pods, err := r.initPods(ctx, node.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	expected, err := r.expectedComponents(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := DecideExpecting(node, pods, expected, r.Clock.Now(), r.Config)
	switch {
	case d.Release:
		return reconcile.Result{}, r.release(ctx, node, d)
	case d.TimedOut:
		r.keepTimedOut(ctx, node, state, d)
	default:
		log.FromContext(ctx).V(1).Info("Holding node", "node", klog.KObj(node), "reason", d.Reason, "requeueAfter", d.RequeueAfter)
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// expectedComponents names the required components that a DaemonSet will run on node: a
// DaemonSet of the component (componentOf, as the toleration check reads it) whose required
// node affinity and nodeSelector match the node. The DaemonSets come from the cache, read
// without a deep copy: this runs on every reconcile and only reads them.
func (r *Reconciler) expectedComponents(ctx context.Context, node *corev1.Node) (map[string]bool, error) {
	list := &appsv1.DaemonSetList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing daemonsets for node %q: %w", node.Name, err)
	}
	return expectedOn(node, list.Items, r.Config), nil
}

// expectedOn is the pure part of expectedComponents.
func expectedOn(node *corev1.Node, dss []appsv1.DaemonSet, cfg *Config) map[string]bool {
	var out map[string]bool
	for i := range dss {
		comp := cfg.componentOf(&dss[i])
		if comp == "" || out[comp] {
			continue
		}
		ok, err := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: dss[i].Spec.Template.Spec}).Match(node)
		if err == nil && ok {
			if out == nil {
				out = map[string]bool{}
			}
			out[comp] = true
		}
	}
	return out
}

func (r *Reconciler) initPods(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{podNodeNameField: nodeName}); err != nil {
		return nil, fmt.Errorf("listing init pods of node %q: %w", nodeName, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// release removes the taint and sets completedAt in one guarded write.
func (r *Reconciler) release(ctx context.Context, node *corev1.Node, d Decision) error {
	now := r.Clock.Now()
	written, wrote, err := r.Writer.Write(ctx, node, r.Config.releaseMutation(now))
	if err != nil {
		return fmt.Errorf("releasing node %q: %w", node.Name, err)
	}
	r.forget(node.Name)
	if !wrote {
		return nil
	}
	outcome := "ready"
	if d.TimedOut {
		outcome = "timeout"
		timeoutsTotal.WithLabelValues(string(TimeoutRelease)).Inc()
		r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonTimedOut, eventActionRelease, "Released without readiness: %s", d.Reason)
	}
	releasesTotal.WithLabelValues(outcome).Inc()
	holdSeconds.Observe(now.Sub(node.CreationTimestamp.Time).Seconds())
	if !d.ReadyAt.IsZero() && !now.Before(d.ReadyAt) {
		releaseLatencySeconds.Observe(now.Sub(d.ReadyAt).Seconds())
	}
	r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonReleased, eventActionRelease, "Removed startup taint %s: %s", r.Config.Taint.Key, d.Reason)
	log.FromContext(ctx).Info("Released node", "node", klog.KObj(node), "reason", d.Reason,
		"hold", now.Sub(node.CreationTimestamp.Time).Round(time.Millisecond))
	return nil
}

// keepTimedOut alerts once per node when the keep policy holds a timed-out node.
func (r *Reconciler) keepTimedOut(ctx context.Context, node *corev1.Node, state *nodeState, d Decision) {
	r.mu.Lock()
	first := !state.timedOut
	state.timedOut = true
	r.mu.Unlock()
	if !first {
		return
	}
	timeoutsTotal.WithLabelValues(string(TimeoutKeep)).Inc()
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonTimedOut, eventActionGate, "Keeping startup taint: %s", d.Reason)
	log.FromContext(ctx).Info("Node timed out, keeping taint", "node", klog.KObj(node), "reason", d.Reason)
}

// track records a gated node, emitting the Held event the first time this process sees it.
func (r *Reconciler) track(ctx context.Context, node *corev1.Node) *nodeState {
	r.mu.Lock()
	if r.nodes == nil {
		r.nodes = map[string]*nodeState{}
	}
	st, ok := r.nodes[node.Name]
	if ok && st.uid == string(node.UID) {
		r.mu.Unlock()
		return st
	}
	st = &nodeState{uid: string(node.UID)}
	r.nodes[node.Name] = st
	gatedNodes.Set(float64(len(r.nodes)))
	r.mu.Unlock()
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonHeld, eventActionGate, "Holding node with startup taint %s until its init Pods are ready", r.Config.Taint.Key)
	log.FromContext(ctx).Info("Holding node", "node", klog.KObj(node))
	return st
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.nodes[name]; ok {
		delete(r.nodes, name)
		gatedNodes.Set(float64(len(r.nodes)))
	}
}

// nodeChanged filters Node updates down to those that can change a decision: taints,
// labels, annotations, or (with a required condition) conditions. Status heartbeats are
// the bulk of Node updates and can be dropped.
func nodeChanged(cfg *Config, old, cur *corev1.Node) bool {
	if !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		old.UID != cur.UID {
		return true
	}
	t := cfg.rules().condType
	return t != "" && conditionStatus(old, t) != conditionStatus(cur, t)
}

func conditionStatus(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return n.Status.Conditions[i].Status
		}
	}
	return ""
}

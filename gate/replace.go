package gate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/rule"
)

// Event reasons of timeoutPolicy replace.
const (
	// ReasonReplacing: the gate deleted the NodeClaim of a node that never warmed.
	ReasonReplacing = "StartupGateReplacing"
	// ReasonReplaceStopped: the storm guard keeps a timed-out node held instead.
	ReasonReplaceStopped = "StartupGateReplaceStopped"
	// ReasonWouldReplace: a dry-run rule's report of the replacement it would make.
	ReasonWouldReplace = "StartupGateWouldReplace"
)

// nodePoolKind is the kind whose metadata holds a rule's storm guard.
const nodePoolKind = "NodePool"

// replace acts on a decision to replace a timed-out node (rule.Decision.Replace): it reads
// what the budget and the guard need, decides (rule.DecideReplace), and for a replacement
// records the guard on the NodePool, marks the node, and deletes its NodeClaim, in that
// order, so that a gate stopped between two of them over-counts a timeout at worst and
// never deletes another NodeClaim. It returns when to decide again.
func (r *Reconciler) replace(ctx context.Context, f *facts, rl *rule.Rule, st *ruleState, d rule.Decision) (time.Duration, error) {
	r.replaceMu.Lock()
	defer r.replaceMu.Unlock()
	now := r.Clock.Now()
	// A marked node only has its NodeClaim deleted again: it needs neither the pool nor
	// the other nodes, and a failed read of them must not hold that delete back.
	v, pool := rl.ViewOf(f.node, nil, nil, "", nil), (*metav1.PartialObjectMetadata)(nil)
	if d.State != rule.StateReplacing {
		var err error
		if v, pool, err = r.replaceView(ctx, f.node, rl); err != nil {
			return 0, err
		}
	}
	rp := rl.DecideReplace(d, v, now)
	logger := log.FromContext(ctx).WithValues("node", klog.KObj(f.node), "rule", rl.Name, "nodepool", v.Pool)
	switch rp.Action {
	case rule.ReplaceKeep, rule.ReplaceStopped:
		r.replaceHeld(ctx, f.node, rl, st, v.Pool, rp)
		return rp.After, nil
	case rule.ReplaceWait:
		replaceStopped.WithLabelValues(rl.Name, v.Pool).Set(0)
		logger.V(1).Info("Timed out, waiting to replace", "reason", rp.Reason, "after", rp.After)
		return rp.After, nil
	case rule.ReplaceNow:
		replaceStopped.WithLabelValues(rl.Name, v.Pool).Set(0)
		if err := r.recordGuard(ctx, rl, pool, rp.Guard); err != nil {
			return 0, err
		}
		d.Write = rule.WriteReplace
		written, wrote, err := r.write(ctx, f, rl, d)
		if err != nil || !wrote || !rl.Replacing(written) {
			return 0, err // the node changed under the decision: the next event decides again
		}
		r.replacing.note(rl.Name, written)
		timeoutsTotal.WithLabelValues(rl.Name, string(rule.TimeoutReplace)).Inc()
	}
	if !r.firstTime(&st.claimDeleted) {
		return 0, nil
	}
	if err := r.deleteClaim(ctx, f.node); err != nil {
		r.mu.Lock()
		st.claimDeleted = false
		r.mu.Unlock()
		return 0, err
	}
	if rp.Action == rule.ReplaceDelete {
		logger.Info("Deleted the NodeClaim of a node marked for replacement", "reason", d.Reason)
		return 0, nil
	}
	replacementsTotal.WithLabelValues(rl.Name, v.Pool).Inc()
	r.Recorder.Eventf(f.node, nil, corev1.EventTypeWarning, ReasonReplacing, eventActionRelease, "Rule %s: %s; %s", rl.Name, d.Reason, rp.Reason)
	logger.Info("Replacing a node that never warmed", "reason", d.Reason, "timeoutsInARow", rp.Guard.Timeouts)
	return 0, nil
}

// replaceHeld reports, once per node, a timed-out node kept held: the storm guard stopped
// its replacement, or nothing can replace it.
func (r *Reconciler) replaceHeld(ctx context.Context, node *corev1.Node, rl *rule.Rule, st *ruleState, pool string, rp rule.Replacement) {
	reason := ReasonTimedOut
	if rp.Action == rule.ReplaceStopped {
		replaceStopped.WithLabelValues(rl.Name, pool).Set(1)
		reason = ReasonReplaceStopped
	}
	if !r.firstTime(&st.timedOut) {
		return
	}
	timeoutsTotal.WithLabelValues(rl.Name, string(rule.TimeoutReplace)).Inc()
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, eventActionGate, "Rule %s: keeping startup taint: %s", rl.Name, rp.Reason)
	log.FromContext(ctx).Info("Node timed out, kept held", "node", klog.KObj(node), "rule", rl.Name, "nodepool", pool, "reason", rp.Reason)
}

// replaceView gathers what DecideReplace reads (rule.ViewOf): the Nodes as the apiserver has
// them, the nodes this process marked and a lagging read does not show marked yet, and the pool's guard from the
// apiserver (the NodePool as read, for the guard's write, is returned too; nil when it was
// not read). A read that fails is an error, for the reconcile's retry: a node kept held on
// it would wait for its next change. A NodePool that is gone (or Karpenter's CRDs with it)
// is none: the node is kept held, and looked at again later. Callers hold replaceMu.
func (r *Reconciler) replaceView(ctx context.Context, node *corev1.Node, rl *rule.Rule) (rule.ReplaceView, *metav1.PartialObjectMetadata, error) {
	claim, _, _ := rule.NodeClaimOf(node)
	name := node.Labels[rule.KarpenterNodePoolLabel]
	if claim == "" || name == "" {
		return rl.ViewOf(node, nil, nil, "", nil), nil, nil
	}
	pool := nodePool(name)
	if err := r.apiReader().Get(ctx, client.ObjectKey{Name: name}, pool); apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return rl.ViewOf(node, nil, nil, "", fmt.Errorf("reading NodePool %s: %w", name, err)), nil, nil
	} else if err != nil {
		return rule.ReplaceView{}, nil, fmt.Errorf("reading NodePool %s for node %q: %w", name, node.Name, err)
	}
	// From the apiserver, not the cache: the replacements in flight are the marks every
	// replica wrote, the last one of a leader that just stopped among them.
	list := &corev1.NodeList{}
	if err := r.apiReader().List(ctx, list); err != nil {
		return rule.ReplaceView{}, nil, fmt.Errorf("listing nodes for rule %q's replacements (node %q): %w", rl.Name, node.Name, err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	marked := map[string]bool{}
	for i := range list.Items {
		n := &list.Items[i]
		nodes[i] = n
		if r.replacing.pending(rl.Name, n, rl.HasTaint(n) && rl.Replacing(n)) {
			marked[n.Name] = true
		}
	}
	return rl.ViewOf(node, nodes, marked, pool.Annotations[rl.TimeoutsAnnotation()], nil), pool, nil
}

// recordGuard writes the pool's guard, guarded by the version read (a conflict fails the
// reconcile, which decides again on a fresh read).
func (r *Reconciler) recordGuard(ctx context.Context, rl *rule.Rule, pool *metav1.PartialObjectMetadata, g rule.Guard) error {
	if pool == nil {
		return fmt.Errorf("recording rule %q's timeouts: no NodePool read", rl.Name)
	}
	updated := pool.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[rl.TimeoutsAnnotation()] = g.String()
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(pool, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording rule %q's timeouts on NodePool %s: %w", rl.Name, pool.Name, err)
	}
	return nil
}

// deleteClaim deletes the node's NodeClaim, by the UID the node's owner reference names: a
// NodeClaim of that name made since is not the node's. One already gone is no error.
func (r *Reconciler) deleteClaim(ctx context.Context, node *corev1.Node) error {
	name, uid, ok := rule.NodeClaimOf(node)
	if !ok {
		return nil
	}
	claim := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: rule.KarpenterAPIVersion, Kind: rule.KarpenterNodeClaimKind}}
	claim.Name = name
	u := types.UID(uid)
	err := r.Client.Delete(ctx, claim, client.Preconditions{UID: &u})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another NodeClaim by that name
	}
	if err != nil {
		return fmt.Errorf("deleting NodeClaim %s of node %q: %w", name, node.Name, err)
	}
	return nil
}

// nodePool is an empty NodePool's metadata, to read into.
func nodePool(name string) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: rule.KarpenterAPIVersion, Kind: nodePoolKind}}
	p.Name = name
	return p
}

// apiReader is the reader of the apiserver itself, or the cached client when there is none
// (unit tests).
func (r *Reconciler) apiReader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}

package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/retrylast"
)

// ErrNodeReplaced means the Node was deleted and re-created under the same name between the
// decision and the write. The decision was about the old object, so nothing is written.
var ErrNodeReplaced = errors.New("node was replaced since it was read")

// Mutation edits a Node in place. It must be idempotent: after a conflict it runs again on a
// fresh copy, and on an object that someone else may already have changed the same way. On
// that copy it re-checks what its write rests on that the Node shows (rule.Rule.Apply and
// ApplyCondition say what) and writes nothing when that changed: Write retries the write,
// not the decision.
type Mutation func(node *corev1.Node)

// NodeWriter is the one place that writes Nodes.
//
// Node.spec.taints is an atomic list: whoever writes it replaces all of it. A plain merge
// or apply patch built from a stale read therefore silently drops a taint that another
// controller added in between. Every write here carries the resourceVersion it was computed
// from (an optimistic lock), so the apiserver rejects it with a conflict instead; we then
// re-read and run the mutation again on the fresh copy. Nothing is lost and nothing is
// overwritten.
type NodeWriter struct {
	// Client writes. Reader is used for the fresh read after a conflict; it should bypass
	// the cache (the manager's APIReader), or a stale cache could conflict again and again.
	Client client.Client
	Reader client.Reader
}

// Write applies mutate to a copy of node and writes the result if anything changed. The first
// attempt starts from the node as given (usually from the cache), which saves a round trip
// on the hot path; every retry starts from a fresh read. It returns the node as written (or
// as read, when there was nothing to write) and whether it wrote.
func (w *NodeWriter) Write(ctx context.Context, node *corev1.Node, mutate Mutation) (*corev1.Node, bool, error) {
	defer observeStage(stageWrite, time.Now())
	current := node
	var (
		result *corev1.Node
		wrote  bool
	)
	try := func() error {
		if current == nil {
			fresh := &corev1.Node{}
			if err := w.Reader.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
				return err
			}
			if fresh.UID != node.UID {
				return ErrNodeReplaced
			}
			current = fresh
		}
		updated := current.DeepCopy()
		mutate(updated)
		if equality.Semantic.DeepEqual(current, updated) {
			result, wrote = current, false
			return nil
		}
		patch := client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{})
		current = nil // any retry re-reads
		if err := w.Client.Patch(ctx, updated, patch); err != nil {
			return err
		}
		result, wrote = updated, true
		return nil
	}
	// Not client-go's RetryOnConflict: it loses an attempt's error that wraps
	// context.Canceled (the gate stopping), and Write returned neither a node nor an error.
	if err := retrylast.OnConflict(try); err != nil {
		return nil, false, fmt.Errorf("writing node %q: %w", node.Name, err)
	}
	return result, wrote, nil
}

// releaseMutation removes only rule r's taint and, the first time, records its completion:
// one write per release per rule, never touching another rule's taint.
func releaseMutation(r *rule.Rule, now time.Time) Mutation {
	return func(n *corev1.Node) { r.Release(n, now) }
}

// taintMutation adds the taints of the given rules that the node lacks.
func taintMutation(rules ...*rule.Rule) Mutation {
	return func(n *corev1.Node) {
		for _, r := range rules {
			r.AddTaint(n)
		}
	}
}

// ReleaseNodes releases the named nodes, or every node holding a rule's taint when names is
// empty, whatever their readiness: every rule's taint comes off, in one write per node. It is the uninstall path (cmd/gate release): once the
// gate is gone nothing else would remove the taint. It returns the nodes it released.
func ReleaseNodes(ctx context.Context, c client.Client, cfg *config.Config, now time.Time, names ...string) ([]string, error) {
	nodes, err := ReadNodes(ctx, c, names)
	if err != nil {
		return nil, err
	}
	w := &NodeWriter{Client: c, Reader: c}
	var released []string
	releaseAll := func(n *corev1.Node) {
		cfg.Migrate(n)
		for _, r := range cfg.Gating() {
			if r.HasTaint(n) {
				r.Release(n, now)
			}
		}
	}
	for i := range nodes {
		if !cfg.HasTaint(&nodes[i]) {
			continue
		}
		if _, wrote, err := w.Write(ctx, &nodes[i], releaseAll); err != nil {
			return released, err
		} else if wrote {
			released = append(released, nodes[i].Name)
		}
	}
	return released, nil
}

// ReadNodes reads the named nodes, or every node when names is empty.
func ReadNodes(ctx context.Context, c client.Reader, names []string) ([]corev1.Node, error) {
	if len(names) == 0 {
		list := &corev1.NodeList{}
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		return list.Items, nil
	}
	nodes := make([]corev1.Node, 0, len(names))
	for _, name := range names {
		n := corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return nil, fmt.Errorf("reading node %q: %w", name, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

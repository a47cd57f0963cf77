package gate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// AllLabels is the extra key that keeps every label of a Node in the cache.
const AllLabels = "*"

// CachedLabels are the label keys the gate's cache keeps on each Node; nil keeps them all.
// A cloud node carries dozens of labels and the rules read a few, yet a map of every
// label on every cached Node was the largest part of the gate's heap on a large cluster
// (docs/performance.md). A required DaemonSet may select nodes by any label, so a decision
// that needs a label the cache lacks reads the Node from the apiserver (Reconciler.labelled).
type CachedLabels map[string]bool

// NewCachedLabels keeps the labels cfg's rules read and the extra keys; AllLabels among
// them keeps every label.
func NewCachedLabels(cfg *config.Config, extra []string) CachedLabels {
	keys := CachedLabels{}
	for _, k := range append(cfg.NodeLabelKeys(), extra...) {
		if k == AllLabels {
			return nil
		}
		keys[k] = true
	}
	return keys
}

// Keeps reports whether the cache keeps the label key on a Node.
func (c CachedLabels) Keeps(key string) bool { return c == nil || c[key] }

// labelled is the node as rl's ExpectedOn must see it: the cached copy, unless a DaemonSet
// of rl's components selects nodes by a label the cache does not keep; then the Node as the
// apiserver has it, read once per reconcile. Without a Reader the cached copy is all there is.
func (r *Reconciler) labelled(ctx context.Context, f *facts, rl *rule.Rule) (*corev1.Node, error) {
	if f.live || r.Reader == nil {
		return f.node, nil
	}
	if f.labelled != nil {
		return f.labelled, nil
	}
	ds, key := rl.LabelOutside(f.dss, r.Labels.Keeps)
	if ds == "" {
		return f.node, nil
	}
	if _, seen := r.uncached.LoadOrStore(ds+" "+key, true); !seen {
		log.FromContext(ctx).Info("A required DaemonSet selects nodes by a label the cache does not keep: such nodes are read from the apiserver when the gate decides; --cache-node-labels keeps it",
			"daemonSet", ds, "label", key, "node", klog.KObj(f.node))
	}
	n := &corev1.Node{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(f.node), n); err != nil {
		return nil, fmt.Errorf("reading the labels of node %q (DaemonSet %s selects on %q): %w", f.node.Name, ds, key, err)
	}
	f.labelled = n
	return n, nil
}

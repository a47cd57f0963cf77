package gate

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/config"
)

// Event reasons of the gate's own placement.
const (
	// ReasonNoExcludedNode: no Ready node matches exclude. Under failurePolicy Fail, a gate
	// whose Pods are all gone then has no node that can register for them to come back on.
	ReasonNoExcludedNode = "StartupGateNoExcludedNode"
	// ReasonOnGatedNode: this replica runs on a node the webhook admits, not an excluded one.
	ReasonOnGatedNode = "StartupGateOnGatedNode"

	eventActionCheckPlacement = "CheckPlacement"
)

// Placement reports, on every replica, what an install that can lock itself out looks like:
// no Ready node matching exclude, and a replica on a node the webhook is called for. The
// chart requires the excluded nodes, but an affinity can be overridden, and nodes come and
// go. It reads the API (a few excluded nodes by label, its own node by name) once a period,
// not the cache: a cold standby replica has no Node cache, and the reads are small.
type Placement struct {
	API      client.Reader
	Recorder events.EventRecorder
	Config   *config.Config
	// Node is this replica's node, Pod and Namespace its own Pod (the downward API); with
	// Node empty the replica's own node is not checked, and without a Pod the events about
	// exclude go on its Node.
	Node, Pod, Namespace string
	Every                time.Duration

	mu   sync.Mutex
	last placement
	seen bool
}

// placement is what one check found.
type placement struct {
	excludedReady int
	// onGated: this replica's node is one exclude leaves (known only with a node name).
	onGated bool
}

// NeedLeaderElection is false: every replica checks where it runs.
func (p *Placement) NeedLeaderElection() bool { return false }

// Start checks at once, then every period, until ctx ends.
func (p *Placement) Start(ctx context.Context) error {
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		p.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// check reads, publishes the gauges and reports each change once.
func (p *Placement) check(ctx context.Context) {
	logger := log.FromContext(ctx).WithValues("node", klog.KRef("", p.Node))
	ready, err := p.excludedReady(ctx)
	if err != nil {
		logger.Error(err, "Reading the excluded nodes")
		return
	}
	now := placement{excludedReady: ready}
	var own *corev1.Node
	if p.Node != "" {
		own = &corev1.Node{}
		if err := p.API.Get(ctx, client.ObjectKey{Name: p.Node}, own); err != nil {
			logger.Error(err, "Reading the gate's own node")
			return
		}
		now.onGated = !p.Config.Excluded(own)
	}
	excludedNodesReady.Set(float64(now.excludedReady))
	onGatedNode.Set(map[bool]float64{true: 1}[now.onGated])

	p.mu.Lock()
	noneNow, gatedNow := newlyTrue(now.excludedReady == 0, p.seen && p.last.excludedReady == 0), newlyTrue(now.onGated, p.seen && p.last.onGated)
	p.last, p.seen = now, true
	p.mu.Unlock()
	if noneNow {
		logger.Info("No Ready node matches exclude: with failurePolicy Fail, a gate whose Pods are all gone has no node that can register for them to come back on",
			"exclude", p.Config.Exclude)
		if about := p.about(own); about != nil {
			p.Recorder.Eventf(about, nil, corev1.EventTypeWarning, ReasonNoExcludedNode, eventActionCheckPlacement,
				"No Ready node matches exclude %v: with failurePolicy Fail, a gate whose Pods are all gone has no node that can register for them to come back on", p.Config.Exclude)
		}
	}
	if gatedNow {
		logger.Info("The gate runs on a node the webhook admits, not an excluded one: with failurePolicy Fail, it cannot come back there once every replica is gone")
		p.Recorder.Eventf(own, nil, corev1.EventTypeWarning, ReasonOnGatedNode, eventActionCheckPlacement,
			"The gate's Pod %s/%s runs on this node, which exclude does not name: the chart's requireExcludedNodes keeps it off such nodes", p.Namespace, p.Pod)
	}
}

// newlyTrue: a condition holds now and did not at the last check.
func newlyTrue(now, before bool) bool { return now && !before }

// excludedReady counts the Ready nodes that match exclude, read by each requirement's
// label selector from the apiserver's watch cache.
func (p *Placement) excludedReady(ctx context.Context) (int, error) {
	ready := map[string]bool{}
	for _, e := range p.Config.Exclude {
		sel, err := config.ExcludeSelector(e)
		if err != nil {
			return 0, err
		}
		var nodes corev1.NodeList
		if err := p.API.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
			return 0, err
		}
		for i := range nodes.Items {
			if NodeReady(&nodes.Items[i]) {
				ready[nodes.Items[i].Name] = true
			}
		}
	}
	return len(ready), nil
}

// about is what an event about exclude regards: the replica's Pod, else its node.
func (p *Placement) about(own *corev1.Node) client.Object {
	if p.Pod != "" && p.Namespace != "" {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Pod, Namespace: p.Namespace}}
	}
	if own != nil {
		return own
	}
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

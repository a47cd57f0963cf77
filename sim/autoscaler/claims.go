package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// NodePoolLabel is the label Karpenter puts on every NodeClaim and Node of a NodePool.
const NodePoolLabel = "karpenter.sh/nodepool"

// Claim is a NodeClaim as the watch first saw it.
type Claim struct {
	Name string
	Seen time.Time
}

// Claims records every NodeClaim of one NodePool created after WatchClaims began: the count
// a scenario judges, which Karpenter's own status would not give once it has deleted some.
type Claims struct {
	mu     sync.Mutex
	seen   map[string]bool
	claims []Claim
	done   chan struct{}
}

// WatchClaims watches the NodePool's NodeClaims from now until ctx ends, resuming a watch
// that the apiserver closes where it ended. The NodeClaim CRD must be installed.
func WatchClaims(ctx context.Context, dyn dynamic.Interface, pool string) (*Claims, error) {
	res := dyn.Resource(NodeClaims)
	sel := metav1.ListOptions{LabelSelector: NodePoolLabel + "=" + pool}
	list, err := res.List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing NodeClaims of %s: %w", pool, err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.LabelSelector
			return res.Watch(ctx, o)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching NodeClaims of %s: %w", pool, err)
	}
	c := &Claims{seen: map[string]bool{}, done: make(chan struct{})}
	for i := range list.Items {
		c.add(list.Items[i].GetName())
	}
	go func() {
		defer close(c.done)
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				if m, isMeta := e.Object.(metav1.Object); isMeta && e.Type == watch.Added {
					c.add(m.GetName())
				}
			}
		}
	}()
	return c, nil
}

func (c *Claims) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen[name] {
		c.seen[name] = true
		c.claims = append(c.claims, Claim{Name: name, Seen: time.Now()})
	}
}

// All is every NodeClaim seen so far, in the order the watch saw them.
func (c *Claims) All() []Claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Claim(nil), c.claims...)
}

// Wait returns once the watch has ended (its context is done).
func (c *Claims) Wait() { <-c.done }

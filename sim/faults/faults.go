package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Fault steps. Each runs in its own goroutine at its offset; those with a duration undo
// themselves when it ends.

// after runs f after d unless ctx ends first.
func after(ctx context.Context, d time.Duration, f func()) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
		f()
	}
}

func (x *run) webhookOutage(ctx context.Context, o *WebhookOutage) error {
	p := x.harness.whProxy
	if p == nil {
		return nil // no webhook in this mode: nothing to take down
	}
	mode := proxyRefuse
	if o.Mode == "hang" {
		mode = proxyHang
	}
	p.setMode(mode)
	after(ctx, o.Duration, func() { p.setMode(proxyPass) })
	return nil
}

func (x *run) webhookLatency(ctx context.Context, l *WebhookLatency) error {
	p := x.harness.whProxy
	if p == nil {
		return nil
	}
	p.setLatency(l.Latency)
	after(ctx, l.Duration, func() { p.setLatency(0) })
	return nil
}

// gateCrash SIGKILLs the leader (the one doing releases) and restarts it later.
func (x *run) gateCrash(ctx context.Context, c *GateCrash) error {
	r, err := x.waitLeader(ctx)
	if err != nil {
		return err
	}
	x.harness.kill(r)
	x.note("gateCrash: killed replica %d", r.id)
	after(ctx, c.RestartAfter, func() { x.fail(x.harness.run(ctx, r)) })
	return nil
}

// leaderFailover kills the leader and waits for another replica to take over.
func (x *run) leaderFailover(ctx context.Context, f *LeaderFailover) error {
	r, err := x.waitLeader(ctx)
	if err != nil {
		return err
	}
	x.harness.kill(r)
	x.note("leaderFailover: killed leader replica %d", r.id)
	next, err := x.waitLeader(ctx)
	if err != nil {
		return err
	}
	x.note("leaderFailover: replica %d took over", next.id)
	if f.RestartAfter > 0 {
		after(ctx, f.RestartAfter, func() { x.fail(x.harness.run(ctx, r)) })
	}
	return nil
}

func (x *run) waitLeader(ctx context.Context) (*replica, error) {
	var r *replica
	err := poll(ctx, 20*time.Second, func() (bool, error) { r = x.harness.leader(ctx); return r != nil, nil })
	if err != nil {
		return nil, fmt.Errorf("no gate replica is leader: %w", err)
	}
	return r, nil
}

// taintWriters runs foreign controllers that add and remove their own taints on the
// scenario's nodes with plain read-modify-write updates (resourceVersion-guarded, as
// client-go's Update is). Their taints are PreferNoSchedule: what matters is that they share
// the atomic spec.taints list with the gate, not that they block scheduling (a NoSchedule
// one left behind would keep the init Pod off the node and stall the scenario). Every removal they make is recorded in the ledger first, so the
// checker can tell their removals from a taint the gate lost.
func (x *run) taintWriters(ctx context.Context, w *TaintWriters) error {
	ctx, cancel := context.WithTimeout(ctx, w.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < w.Writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := fnv.New64a()
			fmt.Fprintf(h, "writer-%d", i)
			rng := rand.New(rand.NewPCG(x.Opts.Seed, h.Sum64()))
			key := fmt.Sprintf("sim.startupgate.io/writer-%d", i)
			t := time.NewTicker(w.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				nodes := x.joinedNodes()
				if len(nodes) == 0 {
					continue
				}
				err := x.flipTaint(ctx, nodes[rng.IntN(len(nodes))], key, w.Unguarded)
				// Losing the race five times in a row is what a busy writer does; it simply
				// tries another node on its next tick.
				if err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
					x.fail(fmt.Errorf("taint writer %d: %w", i, err))
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

func (x *run) flipTaint(ctx context.Context, node, key string, unguarded bool) error {
	nodes := x.writers.CoreV1().Nodes()
	// A flip, once started, finishes even if the writers' time is up: a write cancelled in
	// flight may still have been applied, and the ledger must not be left guessing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if unguarded && err == nil {
			// Think a while on a copy, then write it back without the lock.
			time.Sleep(5 * time.Millisecond)
			n.ResourceVersion = ""
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		kept := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		removing := len(kept) < len(n.Spec.Taints)
		if removing {
			x.recorder.ledger.Intend(node, key)
		} else {
			kept = append(kept, corev1.Taint{Key: key, Value: "x", Effect: corev1.TaintEffectPreferNoSchedule})
		}
		n.Spec.Taints = kept
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		if removing && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			x.recorder.ledger.Removed(node, key) // rejected: not removed after all
		}
		return err
	})
}

func (x *run) apiserverRestart(ctx context.Context, r *APIServerRestart) error {
	if x.Opts.Plane == nil {
		return fmt.Errorf("apiserverRestart needs the embedded backend")
	}
	return x.Opts.Plane.RestartAPIServer(ctx, r.Down)
}

func (x *run) watchDrops(ctx context.Context, w *WatchDrops) error {
	p := x.harness.apiProxy
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.Duration)
	defer cancel()
	t := time.NewTicker(w.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			x.mu.Lock()
			x.counters.watchCuts += p.cutAll()
			x.mu.Unlock()
		}
	}
}

func (x *run) deleteInitDaemonSet(ctx context.Context, d *DeleteDaemonSet) error {
	if err := x.client.AppsV1().DaemonSets(x.ns).Delete(ctx, d.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		return err
	}
	// No garbage collector runs in the embedded plane; remove the Pods as it would.
	for _, in := range x.sc.Init {
		if in.Name != d.Name {
			continue
		}
		sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: in.Labels})
		return x.client.CoreV1().Pods(x.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: sel})
	}
	return nil
}

func (x *run) nodeDelete(ctx context.Context, d *NodeDelete) error {
	x.kubelet.Deregister(d.Node)
	if err := x.client.CoreV1().Nodes().Delete(ctx, d.Node, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		return err
	}
	return x.deletePodsOn(ctx, d.Node)
}

func (x *run) scale(ctx context.Context, s *Scale) error {
	_, err := x.client.AppsV1().Deployments(x.ns).Patch(ctx, s.Workload, "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, s.Replicas)), metav1.PatchOptions{})
	if err == nil {
		x.mu.Lock()
		x.replicas[s.Workload] = s.Replicas
		x.mu.Unlock()
	}
	return err
}

// bypassPods creates Pods bound straight to nodes that still hold the startup taint, the
// way a controller that sets spec.nodeName would. The Pod guard must deny them; without it,
// the checker must catch them as early Pods.
func (x *run) bypassPods(ctx context.Context, b *BypassPods) error {
	var held []string
	for _, rec := range x.recorder.Snapshot() {
		if rec.Gated && !rec.Tainted.IsZero() && rec.Released.IsZero() && rec.Deleted.IsZero() {
			held = append(held, rec.Name)
		}
	}
	if len(held) == 0 {
		return fmt.Errorf("bypassPods: no node holds the startup taint at this moment")
	}
	for i := 0; i < b.Count; i++ {
		node := held[i%len(held)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bypass-", Namespace: x.ns,
				Labels: map[string]string{"sim.startupgate.io/bypass": "true"}},
			Spec: x.podSpec(nil, nil, "10m", ""),
		}
		pod.Spec.NodeName = node
		_, err := x.client.CoreV1().Pods(x.ns).Create(ctx, pod, metav1.CreateOptions{})
		denied := apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
		if err != nil && !denied {
			return err
		}
		if denied {
			x.note("bypass pod denied: %v", err)
		}
		x.mu.Lock()
		if denied {
			x.counters.BypassDenied++
		} else {
			x.counters.BypassCreated++
		}
		x.mu.Unlock()
	}
	return nil
}

package faults

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/internal/retrylast"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Env is everything a fault may touch: the plane, the gate under test, the scenario's
// namespace, and the run's nodes, notes and errors. The runner fills it; a fault reaches
// nothing else.
type Env struct {
	// Client is the simulator's admin client; Writers is the foreign taint writers' own,
	// under a field manager of their own.
	Client, Writers kubernetes.Interface
	Namespace       string
	Scenario        *scenario.Scenario
	Seed            uint64
	Gate            *gateundertest.Harness
	// Plane is the embedded plane, or nil on another backend.
	Plane *controlplane.Embedded
	// Ledger hears of every foreign taint removal the simulator intends.
	Ledger *record.Ledger
	// Nodes lists the nodes joined so far; Records is the recorder's current view.
	Nodes   func() []string
	Records func() []record.NodeRecord
	// Note adds a line to the run's report; Fail makes the run fail (nil is ignored).
	Note func(format string, args ...any)
	Fail func(error)
	// Tally counts what faults did, for the report and the scenario's expect.
	Tally *Tally
}

// Tally counts what the faults did during a run.
type Tally struct {
	BypassDenied, BypassCreated, WatchCuts atomic.Int64
}

// Fault steps. Each runs in its own goroutine at its offset; those with a duration undo
// themselves when it ends. A gate crash's step ends with the kill, its restart comes
// later on its own: a step the timeline keeps after it (afterReleased, say) runs while
// the gate is down, as its offset says, not once the gate is back.

// after runs f after d unless ctx ends first.
func after(ctx context.Context, d time.Duration, f func()) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
		f()
	}
}

// WebhookOutage makes the webhook refuse or hang for the outage's duration.
func WebhookOutage(ctx context.Context, env *Env, o *scenario.WebhookOutage) error {
	p := env.Gate.WebhookRelay()
	if p == nil {
		return nil // no webhook in this mode: nothing to take down
	}
	mode := controlplane.RelayRefuse
	if o.Mode == "hang" {
		mode = controlplane.RelayHang
	}
	p.SetMode(mode)
	after(ctx, o.Duration, func() { p.SetMode(controlplane.RelayPass) })
	return nil
}

// WebhookLatency delays every admission call for the step's duration.
func WebhookLatency(ctx context.Context, env *Env, l *scenario.WebhookLatency) error {
	p := env.Gate.WebhookRelay()
	if p == nil {
		return nil
	}
	p.SetLatency(l.Latency)
	after(ctx, l.Duration, func() { p.SetLatency(0) })
	return nil
}

// GateCrash SIGKILLs the leader (the one doing releases) and restarts it later.
func GateCrash(ctx context.Context, env *Env, c *scenario.GateCrash) error {
	r, err := env.Gate.WaitLeader(ctx)
	if err != nil {
		return err
	}
	killed := []*gateundertest.Replica{r}
	if c.All {
		killed = env.Gate.Replicas()
	}
	for _, r := range killed {
		env.Gate.Kill(r)
		env.Note("gateCrash: killed replica %d", r.ID())
	}
	go after(ctx, c.RestartAfter, func() {
		for _, r := range killed {
			env.Fail(env.Gate.Run(ctx, r))
		}
	})
	return nil
}

// LeaderFailover kills the leader and waits for another replica to take over.
func LeaderFailover(ctx context.Context, env *Env, f *scenario.LeaderFailover) error {
	r, err := env.Gate.WaitLeader(ctx)
	if err != nil {
		return err
	}
	env.Gate.Kill(r)
	env.Note("leaderFailover: killed leader replica %d", r.ID())
	next, err := env.Gate.WaitLeader(ctx)
	if err != nil {
		return err
	}
	env.Note("leaderFailover: replica %d took over", next.ID())
	if f.RestartAfter > 0 {
		go after(ctx, f.RestartAfter, func() { env.Fail(env.Gate.Run(ctx, r)) })
	}
	return nil
}

// TaintWriters runs foreign controllers that add and remove their own taints on the
// scenario's nodes with plain read-modify-write updates (resourceVersion-guarded, as
// client-go's Update is). Their taints are PreferNoSchedule: what matters is that they share
// the atomic spec.taints list with the gate, not that they block scheduling (a NoSchedule
// one left behind would keep the init Pod off the node and stall the scenario). Every removal they make is recorded in the ledger first, so the
// checker can tell their removals from a taint the gate lost.
func TaintWriters(ctx context.Context, env *Env, w *scenario.TaintWriters) error {
	ctx, cancel := context.WithTimeout(ctx, w.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < w.Writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := fnv.New64a()
			fmt.Fprintf(h, "writer-%d", i)
			rng := rand.New(rand.NewPCG(env.Seed, h.Sum64()))
			key := fmt.Sprintf("sim.startupgate.io/writer-%d", i)
			t := time.NewTicker(w.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				nodes := env.Nodes()
				if len(nodes) == 0 {
					continue
				}
				err := flipTaint(ctx, env, nodes[rng.IntN(len(nodes))], key, w.Unguarded)
				// Losing the race five times in a row is what a busy writer does; it simply
				// tries another node on its next tick.
				if err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
					env.Fail(fmt.Errorf("taint writer %d: %w", i, err))
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

func flipTaint(ctx context.Context, env *Env, node, key string, unguarded bool) error {
	nodes := env.Writers.CoreV1().Nodes()
	// A flip, once started, finishes even if the writers' time is up: a write cancelled in
	// flight may still have been applied, and the ledger must not be left guessing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return retrylast.OnConflict(func() error {
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
			env.Ledger.Intend(node, key)
		} else {
			kept = append(kept, corev1.Taint{Key: key, Value: "x", Effect: corev1.TaintEffectPreferNoSchedule})
		}
		n.Spec.Taints = kept
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		if removing && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			env.Ledger.Removed(node, key) // rejected: not removed after all
		}
		return err
	})
}

// APIServerRestart kills the embedded plane's apiserver and starts it again.
func APIServerRestart(ctx context.Context, env *Env, r *scenario.APIServerRestart) error {
	if env.Plane == nil {
		return fmt.Errorf("apiserverRestart needs the embedded backend")
	}
	return env.Plane.RestartAPIServer(ctx, r.Down)
}

// WatchDrops cuts every connection between the gate and the apiserver, every so often.
func WatchDrops(ctx context.Context, env *Env, w *scenario.WatchDrops) error {
	p := env.Gate.APIRelay()
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
			env.Tally.WatchCuts.Add(int64(p.CutAll()))
		}
	}
}

// DeleteInitDaemonSet deletes an init DaemonSet and its Pods.
func DeleteInitDaemonSet(ctx context.Context, env *Env, d *scenario.DeleteDaemonSet) error {
	if err := env.Client.AppsV1().DaemonSets(env.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	// No garbage collector runs in the embedded plane; remove the Pods as it would.
	for _, in := range env.Scenario.Init {
		if in.Name != d.Name {
			continue
		}
		sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: in.Labels})
		return env.Client.CoreV1().Pods(env.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: sel})
	}
	return nil
}

// heldWait bounds how long BypassPods waits for a node that holds the startup taint.
const heldWait = 30 * time.Second

// heldNodes returns the nodes the recorder has seen tainted and not yet released, waiting
// for one if there is none yet. A step's time counts from the run's start, and a cold CI
// run's plane, busy with two other packages' tests, had recorded none of nodename-bypass's
// 10 nodes 1.5 s after they began to join; their init Pods hold them for 4 s after that, so
// the wait keeps the step's premise, and a gate that released them all would still fail it.
func heldNodes(ctx context.Context, env *Env) ([]string, error) {
	var held []string
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, heldWait, true, func(context.Context) (bool, error) {
		held = held[:0]
		for _, rec := range env.Records() {
			if rec.Gated && !rec.Tainted.IsZero() && rec.Released.IsZero() && rec.Deleted.IsZero() {
				held = append(held, rec.Name)
			}
		}
		return len(held) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("bypassPods: no node held the startup taint within %s: %w", heldWait, err)
	}
	if waited := time.Since(start); waited >= 100*time.Millisecond {
		env.Note("bypassPods: waited %s for a node that holds the startup taint", waited.Round(time.Millisecond))
	}
	return held, nil
}

// BypassPods creates Pods bound straight to nodes that still hold the startup taint, the
// way a controller that sets spec.nodeName would. The Pod guard must deny them; without it,
// the checker must catch them as early Pods.
func BypassPods(ctx context.Context, env *Env, b *scenario.BypassPods) error {
	held, err := heldNodes(ctx, env)
	if err != nil {
		return err
	}
	for i := 0; i < b.Count; i++ {
		node := held[i%len(held)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bypass-", Namespace: env.Namespace,
				Labels: map[string]string{record.BypassLabel: "true"}},
			Spec: env.Scenario.PodSpec(nil, nil, "10m", ""),
		}
		pod.Spec.NodeName = node
		_, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		denied := apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
		if err != nil && !denied {
			return err
		}
		if denied {
			env.Note("bypass pod denied: %v", err)
		}
		if denied {
			env.Tally.BypassDenied.Add(1)
		} else {
			env.Tally.BypassCreated.Add(1)
		}
	}
	return nil
}

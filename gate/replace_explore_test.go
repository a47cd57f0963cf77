package gate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// replaceWorld is a generated path's world for timeoutPolicy replace: nodes of two
// NodePools that never warm, unless warmed; a Karpenter that removes a node once its
// NodeClaim is deleted, when it gets to it; a gate that may crash between its writes and
// restart with nothing in memory, and whose rule may be switched to keep and back.
type replaceWorld struct {
	t       *testing.T
	e       *reconcilerEnv
	cfg     *config.Config
	keep    *config.Config
	rl      *rule.Rule
	nodes   []string
	deleted map[string]bool // NodeClaims deleted, by node
	// crashNext fails the gate's next write (the guard's patch, the mark, or the delete),
	// as a gate killed before it.
	crashNext bool
	path      []string
}

var errReplaceCrash = errors.New("crash point")

func newReplaceWorld(t *testing.T) *replaceWorld {
	t.Helper()
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.Rules = []rule.Rule{{Name: config.DefaultRuleName, Taint: gateTaint, Components: c.Components,
			MaxHold: metav1.Duration{Duration: 5 * time.Minute}, TimeoutPolicy: rule.TimeoutReplace, MaxReplacing: 2, ReplaceStopAfter: 3}}
	})
	keep := testobj.ValidConfig(t, func(c *config.Config) {
		c.Rules = []rule.Rule{{Name: config.DefaultRuleName, Taint: gateTaint, Components: c.Components,
			MaxHold: metav1.Duration{Duration: 5 * time.Minute}, TimeoutPolicy: rule.TimeoutKeep}}
	})
	w := &replaceWorld{t: t, cfg: cfg, keep: keep, rl: cfg.EffectiveRules()[0], deleted: map[string]bool{}}
	objs := []client.Object{karpenterObject("NodePool", "a"), karpenterObject("NodePool", "b")}
	for i := range 5 {
		name := fmt.Sprintf("n%d", i)
		w.nodes = append(w.nodes, name)
		made := claimedNode(name, []string{"a", "b"}[i%2])
		// Created from 10m before the clock's start to its start: some time out at once,
		// others only after time passes.
		made[0].(*corev1.Node).CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * 150 * time.Second))
		objs = append(objs, made...)
	}
	w.e = newReconcilerEnv(t, cfg, false, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return w.crashPoint(func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == rule.KarpenterNodeClaimKind {
				return w.crashPoint(func() error {
					w.deleted[strings.TrimPrefix(obj.GetName(), "claim-")] = true
					return c.Delete(ctx, obj, opts...)
				})
			}
			return c.Delete(ctx, obj, opts...)
		},
	}, objs...)
	w.e.r.Reader = w.e.c
	return w
}

// crashPoint runs the write, unless a crash was armed for it: then the gate restarts,
// knowing nothing, and the write is lost.
func (w *replaceWorld) crashPoint(write func() error) error {
	if !w.crashNext {
		return write()
	}
	w.crashNext = false
	w.restart(w.e.r.Config)
	return errReplaceCrash
}

// restart is a new gate process on the same API, with cfg.
func (w *replaceWorld) restart(cfg *config.Config) {
	old := w.e.r
	w.e.r = &Reconciler{Client: old.Client, Reader: old.Reader, Writer: old.Writer, Recorder: old.Recorder, Clock: old.Clock, Config: cfg}
}

// node is the node as the API has it, or nil once gone.
func (w *replaceWorld) node(name string) *corev1.Node {
	n := &corev1.Node{}
	if err := w.e.c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		if !apierrors.IsNotFound(err) {
			w.t.Fatal(err)
		}
		return nil
	}
	return n
}

// step makes one event of the path.
func (w *replaceWorld) step(rng *rand.Rand) {
	name := w.nodes[rng.IntN(len(w.nodes))]
	ctx := context.Background()
	switch k := rng.IntN(7); k {
	case 0, 1: // the gate decides about a node; a reconcile error is retried later
		w.path = append(w.path, "reconcile "+name)
		_, _ = w.e.r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	case 2: // time passes
		d := []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}[rng.IntN(3)]
		w.path = append(w.path, "wait "+d.String())
		w.e.clock.Step(d)
	case 3: // Karpenter removes a node whose NodeClaim was deleted
		if n := w.node(name); n != nil && w.deleted[name] {
			w.path = append(w.path, "karpenter removes "+name)
			if err := w.e.c.Delete(ctx, n); err != nil {
				w.t.Fatal(err)
			}
		}
	case 4: // the next write of the gate is lost: it crashes before it, and restarts
		w.path = append(w.path, "crash at the next write")
		w.crashNext = true
	case 5: // an operator switches the rule between replace and keep, rolling the gate
		cfg := w.cfg
		if w.e.r.Config == w.cfg {
			cfg = w.keep
		}
		w.path = append(w.path, "rule now "+string(cfg.EffectiveRules()[0].TimeoutPolicy))
		w.restart(cfg)
	case 6: // a node of the pool warms (its init Pod Ready)
		if w.node(name) != nil && !w.deleted[name] {
			w.path = append(w.path, name+" warms")
			readyInit(w.t, w.e.c, "init-"+name, w.e.clock.Now())
		}
	}
}

// judge checks the invariants: no more than maxReplacing nodes marked and held at once; no
// NodeClaim deleted but of a node marked for replacement; no node marked before its
// maxHold; and no pool with more replacements in a row than the guard allows.
func (w *replaceWorld) judge() string {
	held := 0
	for _, name := range w.nodes {
		n := w.node(name)
		if n == nil {
			continue
		}
		if w.deleted[name] && !w.rl.Replacing(n) {
			return fmt.Sprintf("%s: its NodeClaim deleted, the node not marked", name)
		}
		if w.rl.Replacing(n) && w.rl.HasTaint(n) {
			held++
		}
		if w.rl.Replacing(n) && w.e.clock.Now().Sub(n.CreationTimestamp.Time) < w.rl.MaxHold.Duration {
			return fmt.Sprintf("%s: marked before its maxHold", name)
		}
	}
	if held > w.rl.MaxReplacing {
		return fmt.Sprintf("%d nodes in replacement at once, maxReplacing %d", held, w.rl.MaxReplacing)
	}
	for _, pool := range []string{"a", "b"} {
		p := karpenterObject("NodePool", pool)
		if err := w.e.c.Get(context.Background(), client.ObjectKey{Name: pool}, p); err != nil {
			w.t.Fatal(err)
		}
		g, err := rule.ParseGuard(p.GetAnnotations()[w.rl.TimeoutsAnnotation()])
		if err != nil {
			return fmt.Sprintf("pool %s: %v", pool, err)
		}
		if g.Timeouts > w.rl.ReplaceStopAfter {
			return fmt.Sprintf("pool %s: %d replacements in a row, the guard stops at %d", pool, g.Timeouts, w.rl.ReplaceStopAfter)
		}
	}
	return ""
}

// TestExploreReplace walks generated paths of timed-out nodes under timeoutPolicy replace,
// through the controller: reconciles in any order, time, Karpenter's removals, crashes
// before any of the gate's writes (the guard, the mark, the delete) with a restart that
// forgets everything, the rule switched to keep and back, and nodes warming. Every path is
// judged after every step.
func TestExploreReplace(t *testing.T) {
	const paths, steps = 60, 30
	var replaced, stopped int
	for seed := range uint64(paths) {
		w := newReplaceWorld(t)
		rng := rand.New(rand.NewPCG(seed, 54))
		for range steps {
			w.step(rng)
			if v := w.judge(); v != "" {
				t.Fatalf("seed %d: %s, after:\n  %s", seed, v, strings.Join(w.path, "\n  "))
			}
		}
		replaced += len(w.deleted)
		if w.guardReached() {
			stopped++
		}
	}
	// The paths must reach what they judge: replacements, and a guard at its limit.
	if replaced == 0 || stopped == 0 {
		t.Errorf("%d paths: %d NodeClaims deleted, %d paths with a guard at its limit; want some of each", paths, replaced, stopped)
	}
	t.Logf("%d paths of %d steps: %d NodeClaims deleted, %d paths reached a guard's limit", paths, steps, replaced, stopped)
}

// guardReached reports whether a pool's guard stands at its limit.
func (w *replaceWorld) guardReached() bool {
	for _, pool := range []string{"a", "b"} {
		p := karpenterObject("NodePool", pool)
		if err := w.e.c.Get(context.Background(), client.ObjectKey{Name: pool}, p); err != nil {
			w.t.Fatal(err)
		}
		if g, _ := rule.ParseGuard(p.GetAnnotations()[w.rl.TimeoutsAnnotation()]); g.Timeouts == w.rl.ReplaceStopAfter {
			return true
		}
	}
	return false
}

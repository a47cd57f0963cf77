package gate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

// TestBatchReadStartsAfterTheCall: a caller that arrives while a round reads is not served
// by that read, which may have begun before a write the caller must see (the kubelet's new
// boot ID a millisecond before the binding), but by the next round's.
func TestBatchReadStartsAfterTheCall(t *testing.T) {
	started, release := make(chan int, 2), make(chan struct{})
	var reads atomic.Int32
	b := newBatch[int](0, time.Minute, 2)
	b.one = func(context.Context, string) (int, bool, error) {
		n := int(reads.Add(1))
		started <- n
		<-release
		return n, true, nil
	}
	ctx := context.Background()
	first := make(chan int)
	go func() {
		v, _, _ := b.get(ctx, "n")
		first <- v
	}()
	if n := <-started; n != 1 {
		t.Fatalf("first read is read %d", n)
	}
	// The first round is reading: this caller must wait for a round that starts later.
	second := make(chan int)
	go func() {
		v, _, _ := b.get(ctx, "n")
		second <- v
	}()
	// Let the second caller join its round before the first read returns; the second read
	// cannot start before the second caller has joined (only its call makes the round).
	if n := <-started; n != 2 {
		t.Fatalf("second read is read %d", n)
	}
	close(release)
	if v := <-first; v != 1 {
		t.Errorf("first caller served by read %d, want 1", v)
	}
	if v := <-second; v != 2 {
		t.Errorf("caller that arrived while read 1 was in flight served by read %d, want 2 (a read that began after its call)", v)
	}
}

// TestBatchListsABurst: callers that wait at once share one round, and a round of many
// names reads them in one list; one of few names reads each alone.
func TestBatchListsABurst(t *testing.T) {
	var ones, alls atomic.Int32
	hold := make(chan struct{})
	b := newBatch[string](0, time.Minute, 1)
	b.one = func(_ context.Context, name string) (string, bool, error) {
		ones.Add(1)
		<-hold
		return name, true, nil
	}
	b.missing = b.one
	b.all = func(context.Context) (map[string]string, error) {
		alls.Add(1)
		out := map[string]string{}
		for i := range 40 {
			out[fmt.Sprint("n", i)] = fmt.Sprint("n", i)
		}
		return out, nil
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() { _, _, _ = b.get(ctx, "n0") }) // round 1, alone: holds the only slot
	for ones.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	errs := make(chan error, 30)
	for i := range 30 { // all join round 2, which waits for the slot
		wg.Go(func() {
			name := fmt.Sprint("n", i%10)
			if v, found, err := b.get(ctx, name); err != nil || !found || v != name {
				errs <- fmt.Errorf("get(%s) = %q, %v: %w", name, v, found, err)
			}
		})
	}
	for b.joined.Load() < 31 { // every caller in a round: the 30 in the one waiting for the slot
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ones.Load() != 1 || alls.Load() != 1 {
		t.Errorf("31 callers: %d reads alone and %d lists, want 1 and 1", ones.Load(), alls.Load())
	}
}

// TestPodGuardBurstSharesReads: a binding burst onto released nodes costs a round of shared
// reads per node, not a read per binding, with a rule that gates reboots and with a
// continuous rule. One round at a time here, and the API held until every binding has
// joined one, so that the rounds are exactly two (the first, and the one the rest wait in)
// however the machine schedules the bindings.
func TestPodGuardBurstSharesReads(t *testing.T) {
	released := func(n *corev1.Node) {
		testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")(n)
		testobj.NodeAnnotation(cniDone, "1")(n)
		n.Status.NodeInfo.BootID = "b1"
	}
	for _, c := range []struct {
		name  string
		mod   func(*config.Config)
		batch func(*PodGuard) interface{ joinedCalls() int64 }
	}{
		{"onReboot gate", func(c *config.Config) {
			c.Rules = []rule.Rule{{Name: config.DefaultRuleName, NodeSelector: config.DefaultNodeSelector, Taint: gateTaint, OnReboot: rule.RebootGate,
				Components: []rule.Component{{Name: "init", Selector: config.DefaultInitLabel}}}}
		}, func(g *PodGuard) interface{ joinedCalls() int64 } {
			g.nodes.slots = make(chan struct{}, 1)
			return g.nodes
		}},
		{"continuous rule", func(c *config.Config) {
			c.Rules = []rule.Rule{{Name: "cni", Mode: rule.Continuous, Taint: cniTaint, Components: []rule.Component{{Name: "cni", Selector: "startup.k8s.io/component=cni"}}}}
		}, func(g *PodGuard) interface{ joinedCalls() int64 } {
			g.initPods.slots = make(chan struct{}, 1)
			return g.initPods
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, c.mod)
			var objs []client.Object
			for i := range 10 {
				n := fmt.Sprint("n", i)
				objs = append(objs, testobj.Node(n, t0, released), componentPod(n+"-cni", n, "cni", testobj.ReadyAt(t0)),
					componentPod(n+"-init", n, "init", testobj.ReadyAt(t0)))
			}
			cache, _ := newFakeClient(interceptor.Funcs{}, objs...)
			release := make(chan struct{})
			api, calls := newFakeClient(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					<-release
					return c.Get(ctx, key, obj, opts...)
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					<-release
					return c.List(ctx, list, opts...)
				},
			}, objs...)
			g := &PodGuard{Cache: cache, API: api, Config: cfg, Timeout: 30 * time.Second}
			b := c.batch(g.batches())
			const bindings = 60
			var wg sync.WaitGroup
			denied := make(chan string, bindings)
			for i := range bindings {
				wg.Go(func() {
					pod := testobj.Pod(fmt.Sprint("p", i), fmt.Sprint("n", i%10), t0, testobj.Namespace("default"))
					if resp := g.Handle(context.Background(), admissionRequest(podKind, admissionv1.Create, mustJSON(t, pod))); !resp.Allowed {
						denied <- resp.Result.Message
					}
				})
			}
			for b.joinedCalls() < bindings {
				time.Sleep(time.Millisecond)
			}
			close(release)
			wg.Wait()
			close(denied)
			for msg := range denied {
				t.Errorf("pod bound to a released node: denied (%s)", msg)
			}
			calls.mu.Lock()
			defer calls.mu.Unlock()
			if reads := calls.gets + calls.lists; reads > 2*10 {
				t.Errorf("%d bindings onto 10 nodes made %d gets and %d lists, want at most a read per node in each of the two rounds", bindings, calls.gets, calls.lists)
			}
		})
	}
}

// joinedCalls is how many calls of get have joined a round.
func (b *batch[T]) joinedCalls() int64 { return b.joined.Load() }

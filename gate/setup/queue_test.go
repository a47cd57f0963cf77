package setup

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestQueueStopsWhileWorkersRun shuts the gate's controller queue down while workers are
// adding, taking and finishing items, as a controller's workers do when its manager stops,
// and requires every worker to return. controller-runtime v0.24.1's priority queue fails
// this within a few rounds (controller-runtime#3538).
func TestQueueStopsWhileWorkersRun(t *testing.T) {
	opts := controllerOptions(20, true, DefaultCacheSyncTimeout)
	for round := range 200 {
		q := opts.NewQueue("test", nil)
		var wg sync.WaitGroup
		for w := range opts.MaxConcurrentReconciles {
			wg.Go(func() {
				for i := 0; ; i++ {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprintf("n-%d-%d", w, i%7)}})
					item, shutdown := q.Get()
					if shutdown {
						return
					}
					q.Done(item)
				}
			})
		}
		time.Sleep(time.Millisecond)
		q.ShutDown()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: workers still blocked in the queue 30s after it shut down", round)
		}
	}
}

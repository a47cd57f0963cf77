package setup

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// controllerOptions are the options of every controller the gate runs.
//
// They replace controller-runtime's default queue, its priority queue, with client-go's
// rate-limited workqueue. In v0.24.1 the priority queue can deadlock when it shuts down
// (kubernetes-sigs/controller-runtime#3538, fixed upstream after the v0.24 line): a worker
// parked in Get leaves through the closed done channel without taking the item the queue
// is already handing it, the hand-off blocks forever holding the queue's locks, and the
// next worker to finish a reconcile blocks in Done. The controller then never stops, the
// manager gives up after its 30 s grace period, and the replica's leader lease is left to
// expire instead of being released. make test hit it in watch-drops. The gate sets no
// priorities, so it loses nothing but the priority queue's preference for live events
// over the initial list, and a gate restart's backlog is one cache read per node.
//
// warm starts the controller's watches before the replica leads (controller-runtime's
// warmup): its informers list and watch while it stands by, and its queue collects what
// they see, so a new leader reconciles from a synced cache at once. syncTimeout bounds
// the wait for their initial lists.
func controllerOptions(workers int, warm bool, syncTimeout time.Duration) controller.Options {
	return controller.Options{MaxConcurrentReconciles: workers, NewQueue: newQueue, EnableWarmup: ptr.To(warm), CacheSyncTimeout: syncTimeout}
}

// newQueue is client-go's workqueue with the per-item backoff the priority queue uses by
// default (5 ms doubling to 1000 s). controller-runtime's other default also caps all
// requeues together at 10 per second, which would slow a burst of failed releases retrying
// at once.
func newQueue(name string, _ workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name})
}

package gate

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/rule"
)

// GuardReader is the Pod guard's own reader of the API: a client of its own, with its own
// rate limit, so that a binding burst cannot use up the controller's (its releases wait on
// the same limiter) and the controller's confirms cannot starve the guard; and a bound on
// the reads in flight, so that a burst queues in the guard, within its budget, rather than
// at the apiserver, where the guard and the controller share one identity and so one
// fair-queuing flow. A read that cannot start within the caller's deadline fails, and the
// guard decides with what it knows.
func GuardReader(base *rest.Config, opts client.Options, qps float32, burst, inFlight int) (client.Reader, error) {
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst, rc.RateLimiter = qps, burst, nil
	rc.UserAgent = rest.DefaultKubernetesUserAgent() + " pod-guard"
	c, err := client.New(rc, opts)
	if err != nil {
		return nil, fmt.Errorf("building the pod guard's client: %w", err)
	}
	return InFlight(c, inFlight), nil
}

// InFlight bounds the reads r serves at once to n (n < 1: 1).
func InFlight(r client.Reader, n int) client.Reader {
	return &inFlight{r: r, slots: make(chan struct{}, max(1, n))}
}

type inFlight struct {
	r     client.Reader
	slots chan struct{}
}

func (f *inFlight) acquire(ctx context.Context) error {
	select {
	case f.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for one of the pod guard's %d reads in flight: %w", cap(f.slots), ctx.Err())
	}
}

// Get reads through r once a slot is free.
func (f *inFlight) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := f.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-f.slots }()
	return f.r.Get(ctx, key, obj, opts...)
}

// List lists through r once a slot is free.
func (f *inFlight) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := f.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-f.slots }()
	return f.r.List(ctx, list, opts...)
}

// watched is obj as the apiserver's watch cache has it, no older than the copy given (its
// resourceVersion is the floor): the guard's read for the windows only it closes. The
// apiserver's watch cache follows etcd directly, and every informer follows it (the gate's
// and the scheduler's alike), so it is newer than the gate's cache by what the gate's watch
// has not delivered yet, seconds on a loaded plane, and behind etcd only by the apiserver's
// own watch of it. It costs no etcd round trip and waits for no other read, where a binding
// burst makes one per binding (docs/performance.md has the bench). A copy with no
// resourceVersion is read from etcd.
func watched(ctx context.Context, api client.Reader, cached, into client.Object) error {
	opts := &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: cached.GetResourceVersion()}}
	return api.Get(ctx, client.ObjectKeyFromObject(cached), into, opts)
}

// liveInitPods are the node's init Pods of continuous rules as the API has them: each such
// Pod the caches hold on the node read by name from the apiserver's watch cache (watched;
// a list would wait for that cache to catch up with etcd, which a binding burst's writes
// keep it from: the bench saw such lists take seconds). A Pod the caches do not hold yet (just
// created) is not read, and a Pod gone since is left out: either can only make the rule's
// requirements look less met, so the guard errs towards a denial, never an allow. When the
// caches cannot be read, the API's list.
func (g *PodGuard) liveInitPods(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	cctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	cached, err := listInitPods(cctx, g.Pods.Reader(g.Cache), g.Config, nodeName)
	if err != nil {
		return listInitPods(ctx, OneReader(g.API), g.Config, nodeName)
	}
	continuous := slices.DeleteFunc(slices.Clone(g.Config.Enforced()), func(r *rule.Rule) bool { return r.Mode != rule.Continuous })
	pods := make([]*corev1.Pod, 0, len(cached))
	for _, c := range cached {
		if !slices.ContainsFunc(continuous, func(r *rule.Rule) bool { return r.SelectsPod(c) }) {
			continue // only a continuous rule's check reads them (decideContinuous)
		}
		p := &corev1.Pod{}
		switch err := watched(ctx, g.API, c, p); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading init pod %s/%s: %w", c.Namespace, c.Name, err)
		}
		pods = append(pods, p)
	}
	return pods, nil
}

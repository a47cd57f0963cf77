package gate

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

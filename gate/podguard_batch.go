package gate

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// batch shares the Pod guard's live reads among the bindings that wait at once. The reboot
// window and a continuous rule's window need a read as new as the binding: a cached view
// lags the kubelet's boot ID or an init Pod's unready write. One read per binding is what a
// binding burst cannot afford (a bench saw one live GET per binding cost two thirds of the
// scheduler's throughput, and thousands of bindings denied when the reads ran out of time).
//
// A caller joins the next round: the one that has not started yet. A round starts once the
// one before it started spacing ago (and fewer than inFlight run), and reads every name
// its callers asked for, either one by one or in one list of them all, whichever reads
// fewer objects. Each caller is served by a read that began after its call, so what it
// sees is at least as new as a read of its own would be: the apiserver serves an unpinned
// read consistently.
type batch[T any] struct {
	// one reads one name; found false means the name is not there (a node deleted).
	one func(ctx context.Context, name string) (v T, found bool, err error)
	// all reads every name at once (nil: never); a name not in it is read by missing.
	all func(ctx context.Context) (map[string]T, error)
	// missing is what a name the list did not give is: read it alone (a node the list's
	// selector did not take), or nothing there (a node with no init Pods).
	missing func(ctx context.Context, name string) (T, bool, error)

	spacing time.Duration // between two rounds' starts
	timeout time.Duration // a round's reads

	slots chan struct{} // rounds in flight

	joined atomic.Int64 // calls of get so far (a test waits for a burst to have joined)

	mu        sync.Mutex
	next      *round[T]
	lastStart time.Time
	listed    int // names the last list gave: what a list costs
}

// round is one shared read: the names its callers asked for, and what was read.
type round[T any] struct {
	names map[string]bool
	done  chan struct{}
	got   map[string]result[T]
	err   error // the list's, for every name
}

type result[T any] struct {
	v     T
	found bool
	err   error
}

// perList is how many objects of a list cost about one read of its own: a request's fixed
// cost (authentication, fair queuing, the round trip) against encoding one more object.
// A round reads its names one by one while they are fewer than the list's size over this.
const perList = 20

// minList is the fewest names a round reads in a list: below it, reads one by one cost
// no more than a list of the smallest cluster.
const minList = 4

func newBatch[T any](spacing, timeout time.Duration, inFlight int) *batch[T] {
	return &batch[T]{spacing: spacing, timeout: timeout, slots: make(chan struct{}, max(1, inFlight))}
}

// get is name as read by a round that starts after this call.
func (b *batch[T]) get(ctx context.Context, name string) (T, bool, error) {
	b.mu.Lock()
	r := b.next
	if r == nil {
		r = &round[T]{names: map[string]bool{}, done: make(chan struct{})}
		b.next = r
		go b.run(r)
	}
	r.names[name] = true
	b.mu.Unlock()
	b.joined.Add(1)
	select {
	case <-r.done:
	case <-ctx.Done():
		var zero T
		return zero, false, ctx.Err()
	}
	if r.err != nil {
		var zero T
		return zero, false, r.err
	}
	res := r.got[name]
	return res.v, res.found, res.err
}

// run starts round r when its turn comes, closes it to new callers, and reads.
func (b *batch[T]) run(r *round[T]) {
	b.slots <- struct{}{}
	defer func() { <-b.slots }()
	b.mu.Lock()
	wait := time.Until(b.lastStart.Add(b.spacing))
	b.mu.Unlock()
	if wait > 0 {
		// Only the next round waits here: a caller arriving now joins it.
		time.Sleep(wait)
	}
	b.mu.Lock()
	b.next = nil // from here on, a caller's read must start after its call: the next round
	b.lastStart = time.Now()
	names := slices.Sorted(maps.Keys(r.names))
	list := b.all != nil && len(names) >= max(minList, b.listed/perList)
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if list {
		r.got, r.err = b.readAll(ctx, names)
	} else {
		r.got = b.readEach(ctx, names)
	}
	close(r.done)
}

func (b *batch[T]) readAll(ctx context.Context, names []string) (map[string]result[T], error) {
	all, err := b.all(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.listed = len(all)
	b.mu.Unlock()
	got := make(map[string]result[T], len(names))
	var missing []string
	for _, n := range names {
		if v, ok := all[n]; ok {
			got[n] = result[T]{v: v, found: true}
		} else {
			missing = append(missing, n)
		}
	}
	maps.Copy(got, b.each(ctx, missing, b.missing))
	return got, nil
}

func (b *batch[T]) readEach(ctx context.Context, names []string) map[string]result[T] {
	return b.each(ctx, names, b.one)
}

// each reads the names at once, each with read.
func (b *batch[T]) each(ctx context.Context, names []string, read func(context.Context, string) (T, bool, error)) map[string]result[T] {
	got := make(map[string]result[T], len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			v, found, err := read(ctx, n)
			mu.Lock()
			got[n] = result[T]{v: v, found: found, err: err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

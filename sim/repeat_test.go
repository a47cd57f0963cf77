package sim

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestRepeatEach checks the soak's schedule with a run that only takes note: every
// repetition of every scenario runs once; an exclusive scenario runs with nothing beside it
// and before the others; no scenario runs beside itself; repetitions of one scenario run in
// order; and at most parallel runs at once. No scenario may wait for another's slowest run:
// every other scenario here finishes all its repetitions while the slow one is still on its
// first, and that run waits for them (or, if they wait on it, gives up).
func TestRepeatEach(t *testing.T) {
	const n, repeat, parallel = 6, 4, 3
	exclusive := func(j int) bool { return j == 2 }
	slow := 0 // scenario 0's first run lasts until every other scenario is through
	var (
		mu        sync.Mutex
		running   = map[int]bool{}
		now, peak int
		next      = make([]int, n)
		log       []string
		othersOut = make(chan struct{})
	)
	othersDone := func() bool { // under mu
		for k := range n {
			if k != slow && next[k] != repeat {
				return false
			}
		}
		return true
	}
	run := func(j, i int) {
		mu.Lock()
		if running[j] {
			t.Errorf("scenario %d runs beside itself", j)
		}
		if exclusive(j) && now > 0 || !exclusive(j) && running[2] {
			t.Errorf("scenario %d (repetition %d) ran beside an exclusive run", j, i)
		}
		if next[j] != i {
			t.Errorf("scenario %d ran repetition %d; want %d", j, i, next[j])
		}
		if !exclusive(j) && next[2] != repeat {
			t.Errorf("scenario %d started before the exclusive scenario finished", j)
		}
		running[j] = true
		now++
		peak = max(peak, now)
		log = append(log, fmt.Sprintf("%d/%d", j, i))
		mu.Unlock()

		if j == slow && i == 0 {
			select {
			case <-othersOut:
			case <-time.After(5 * time.Second):
				t.Errorf("the other scenarios did not finish while the slow scenario's first run lasted: they wait on it")
			}
		}

		mu.Lock()
		defer mu.Unlock()
		running[j] = false
		now--
		next[j]++
		if j != slow && othersDone() {
			close(othersOut)
		}
	}
	repeatEach(context.Background(), n, repeat, parallel, exclusive, run)

	if len(log) != n*repeat {
		t.Fatalf("%d runs; want %d: %v", len(log), n*repeat, log)
	}
	for j, got := range next {
		if got != repeat {
			t.Errorf("scenario %d ran %d repetitions; want %d", j, got, repeat)
		}
	}
	if peak > parallel {
		t.Errorf("%d runs at once; want at most %d", peak, parallel)
	}
}

// TestRepeatEachStopsWithTheContext: an interrupted soak starts no further run.
func TestRepeatEachStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	runs := 0
	repeatEach(ctx, 3, 10, 1, func(int) bool { return false }, func(j, i int) {
		mu.Lock()
		defer mu.Unlock()
		runs++
		if runs == 2 {
			cancel()
		}
	})
	// Each scenario may have been waiting for the one slot when ctx ended; it runs at most that.
	if runs > 2+3 {
		t.Errorf("%d runs after the context ended at the second; want at most one more per scenario", runs)
	}
}

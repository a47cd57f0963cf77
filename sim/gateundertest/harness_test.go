package gateundertest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStacksOfSlowStop: a replica that is slow to stop leaves every goroutine's stack in a
// file the failure names, so that the next such failure says what held it up.
func TestStacksOfSlowStop(t *testing.T) {
	where := stacksOfSlowStop()
	const prefix = "goroutine stacks 10s after the stop: "
	if !strings.HasPrefix(where, prefix) {
		t.Fatalf("stacksOfSlowStop() = %q, want it to start with %q", where, prefix)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(where, prefix), ";")
	defer os.Remove(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "TestStacksOfSlowStop") {
		t.Errorf("%s does not hold this test's own goroutine:\n%.500s", path, raw)
	}
}

// TestKillWaitsForTheStopUnderWay: a kill of a replica that another kill is stopping (a
// crash point's beside an edit's restart) returns only once the replica has stopped: the
// edit would otherwise count the old configuration's writes while the old replica still
// made them, and start the new one beside it.
func TestKillWaitsForTheStopUnderWay(t *testing.T) {
	h := &Harness{}
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	r := &Replica{cancel: cancel, done: make(chan error, 1)}
	go func() {
		<-ctx.Done()
		<-release // still finishing a reconcile
		r.done <- nil
	}()
	first := make(chan error, 1)
	go func() { first <- h.kill(r) }()
	<-ctx.Done() // the first kill has taken the replica and cancelled it
	second := make(chan error, 1)
	go func() { second <- h.kill(r) }()
	select {
	case err := <-second:
		t.Fatalf("the second kill returned (%v) while the replica was still stopping", err)
	case <-time.After(time.Second):
	}
	close(release)
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
}

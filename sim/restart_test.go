package sim

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestGateProcessIsRestarted: a gate process that exits (it does when it loses its lease on
// a saturated apiserver) is started again, as the kubelet starts a deployed gate's
// container again; both the benchmark's gate, run as shipped, and the suite's, with its
// short leases. Here the gate process is killed mid-release from outside the harness, as a
// lost lease ends it; the harness must start it again, the new process must take the lease
// back (after the dead one's expires) and release every node. A replica the run kills on
// purpose stays down: that is gate-crash-mid-release's fault, which restarts it itself.
func TestGateProcessIsRestarted(t *testing.T) {
	for _, shipped := range []bool{true, false} {
		name := map[bool]string{true: "shipped", false: "suite"}[shipped]
		t.Run(name, func(t *testing.T) { checkGateRestarted(t, "gate-restart-"+name, shipped) })
	}
}

// checkGateRestarted runs scenario name with one gate process, shipped or not, kills the
// process from outside the harness, and requires one restart and every node released.
func checkGateRestarted(t *testing.T, name string, shipped bool) {
	t.Helper()
	rc := sharedPlane(t)
	sc, err := scenario.Parse([]byte(`name: ` + name + `
description: the gate process exits mid-release and is started again
gateProcess: {replicas: 1}
workloads:
  - {name: web, replicas: 40}
init:
  - name: init
    ready: {after: 2s, jitter: 1s}
timeline:
  - at: 0s
    join: {count: 20, prefix: n}
expect:
  releasedWithin: 60s
timeout: 2m
`))
	if err != nil {
		t.Fatal(err)
	}
	var firstPid, lastPid, restarts int
	hooks := &Hooks{
		Shipped: shipped,
		Started: func(ctx context.Context, l Live) {
			r := l.Gate().Replicas()[0]
			firstPid = r.Pid()
			go func() {
				select {
				case <-ctx.Done():
				case <-time.After(2500 * time.Millisecond): // init Pods are becoming ready
					if p, err := os.FindProcess(firstPid); err == nil {
						_ = p.Kill()
					}
				}
			}()
		},
		Settled: func(ctx context.Context, l Live) error {
			r := l.Gate().Replicas()[0]
			lastPid = r.Pid()
			restarts, _ = r.Restarts()
			return nil
		},
	}
	runner, err := NewRunner(rc, Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if restarts != 1 || lastPid == firstPid || lastPid == 0 {
		t.Errorf("restarts %d, pid %d then %d; want one restart, as a new process", restarts, firstPid, lastPid)
	}
	if !res.Passed || res.Released != 20 {
		t.Errorf("released %d of 20, passed %v: %v %v", res.Released, res.Passed, res.Failures, res.Errors)
	}
}

package step

import (
	"context"

	"github.com/startupgate/startupgate/sim/scenario"
)

// The gate's perturbations, which the gate under test (sim/gateundertest) carries out in
// the gate's own process: a crash at a chosen Node write, and delayed watch events.

// crashAtWrite kills the in-process gate at its Write-th Node write from the step on.
type crashAtWrite struct{ *scenario.CrashAtWrite }

// Run arms the crash point.
func (c crashAtWrite) Run(_ context.Context, env Env) error {
	return env.Gate().CrashAtWrite(c.Write, c.After, c.RestartAfter, c.Matching)
}

// watchDelay delays the gate's watch events of a resource for a while.
type watchDelay struct{ *scenario.WatchDelay }

// Run starts the delay, which ends on its own after For.
func (w watchDelay) Run(_ context.Context, env Env) error {
	return env.Gate().DelayWatches(w.Resource, w.Delay, w.For)
}

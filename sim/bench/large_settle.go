package bench

import (
	"context"
	"time"
)

// After a fill the plane is still digesting it for a while: the scheduler and the
// controller-manager work through the last Nodes' events, the apiserver through their
// watchers. A gate probed then measures the plane's backlog as much as itself (at 25,000
// static nodes, the gate's initial list ran on a machine the scheduler and the
// controller-manager kept saturated). The large phase waits for the plane to go quiet
// before it probes a gate: after the fill, after the bursts' clean-up for the before gate,
// and after each run's setup, as its scheduler and controller-manager go over every Node
// for the run's new DaemonSet and pending workloads.
const (
	// settleWindow is how long each reading of the plane's CPU lasts.
	settleWindow = 10 * time.Second
	// settleCores is the CPU, in cores, under which the plane (and the simulator) counts
	// as quiet: well above an idle plane's, which at 25,000 static nodes is a few percent
	// of a core besides the controller-manager's node-monitor pass (largeMonitorPeriod).
	settleCores = 0.25
	// settleLimit bounds the wait; a plane that is still busy then is measured as it is,
	// and the report's settle time says so.
	settleLimit = 5 * time.Minute
)

// quiet says whether the processes spent less than settleCores over window.
func quiet(spent map[string]float64, window time.Duration) bool {
	total := 0.0
	for _, s := range spent {
		total += s
	}
	return total < settleCores*window.Seconds()
}

// settle waits until the plane is quiet, or settleLimit has passed, and returns how long
// it waited.
func (lg *large) settle(ctx context.Context) (time.Duration, error) {
	return settle(ctx, lg.progress)
}

// settle waits until the plane is quiet, or settleLimit has passed, and returns how long
// it waited; progress (nil: quiet) hears of a plane still busy at the limit.
func settle(ctx context.Context, progress func(string, ...any)) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < settleLimit {
		before := processesCPU()
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(settleWindow):
		}
		if quiet(cpuSpent(before, processesCPU()), settleWindow) {
			return time.Since(start), nil
		}
	}
	if progress != nil {
		progress("large: the plane was still busy after %s; measuring it as it is", settleLimit)
	}
	return time.Since(start), nil
}

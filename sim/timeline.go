package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
	"github.com/startupgate/startupgate/sim/step"
)

// play runs the timeline, each step in its own goroutine at its offset (and the gate, if
// the scenario installs it late, on gateCtx), and waits until the run settles or times out.
func (rn *run) play(ctx, gateCtx context.Context) {
	if d := rn.sc.GateStartsAt; d > 0 {
		go func() {
			select {
			case <-gateCtx.Done():
			case <-time.After(d):
				if rn.sc.GateStartsAfterBound && !rn.waitBound(gateCtx) {
					return
				}
				if err := rn.harness.Start(gateCtx, rn.replicaCount()); err != nil {
					rn.Fail(fmt.Errorf("starting gate late: %w", err))
				}
			}
		}()
	}
	var wg sync.WaitGroup
	after := step.Sequenced(rn.sc.Timeline)
	done := make([]chan struct{}, len(rn.sc.Timeline))
	for i := range done {
		done[i] = make(chan struct{})
	}
	for i := range rn.sc.Timeline {
		s := &rn.sc.Timeline[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(rn.start.Add(s.At))):
			}
			for _, p := range after[i] {
				select {
				case <-ctx.Done():
					return
				case <-done[p]:
				}
			}
			if s.AfterBound && !rn.waitBound(ctx) {
				return
			}
			if s.AfterReleased && !rn.waitReleased(ctx) {
				return
			}
			if s.AfterRegated && !rn.waitRegated(ctx) {
				return
			}
			rn.step(ctx, s)
			rn.mu.Lock()
			rn.steps++
			rn.lastStep = time.Now()
			rn.mu.Unlock()
		}()
	}
	rn.waitSettled(ctx)
	stepsDone := make(chan struct{})
	go func() { wg.Wait(); close(stepsDone) }()
	select {
	case <-stepsDone:
	case <-time.After(time.Second):
		// Steps still running (a join retrying against a closed webhook) end with ctx.
	}
}

// waitSettled returns once the run has settled, its timeout has passed, or ctx ends,
// printing progress once a second if asked to.
func (rn *run) waitSettled(ctx context.Context) {
	deadline := rn.start.Add(rn.sc.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var lastProgress time.Time
	for {
		settled := rn.settled()
		timedOut := !settled && time.Now().After(deadline)
		if rn.Opts.Progress != nil && (time.Since(lastProgress) >= time.Second || settled || timedOut) {
			phase := report.Running
			switch {
			case settled:
				phase = report.Settled
			case timedOut:
				phase = report.TimedOut
			case lastProgress.IsZero():
				phase = report.Started
			}
			lastProgress = time.Now()
			rn.progress(phase)
		}
		if settled || timedOut {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// step carries out one timeline step through sim/step, with the run as its Env.
func (rn *run) step(ctx context.Context, s *scenario.Step) {
	st, err := step.New(s.Action())
	if err != nil {
		rn.Fail(fmt.Errorf("step at %s: %w", s.At, err))
		return
	}
	if err := st.Run(ctx, rn); err != nil && ctx.Err() == nil {
		rn.Fail(fmt.Errorf("step at %s: %w", s.At, err))
	}
}

// settled: every step has run, every workload Pod is bound, no more nodes are stuck than
// expected, and the gated nodes have settled (nodesSettled).
func (rn *run) settled() bool {
	if rn.caughtEarly() {
		rn.mu.Lock()
		rn.stoppedCaught = true
		rn.mu.Unlock()
		return true
	}
	want := rn.state.WantPods()
	rn.mu.Lock()
	steps, lastStep := rn.steps, rn.lastStep
	rn.mu.Unlock()
	if steps < len(rn.sc.Timeline) {
		return false
	}
	recs := rn.recorder.Snapshot()
	if w := rn.sc.Expect.Window; w > 0 && time.Since(lastStep) < w && (rn.sc.Expect.ReplacementWithin == 0 || check.ReplacementsPending(recs)) {
		return false
	}
	if rn.quiet(recs) {
		return true
	}
	v := check.Check(recs, rn.start, rn.bounds())
	if v.WorkloadPods < want || v.Stuck > rn.sc.Expect.Stuck {
		return false
	}
	if claims := rn.nodeClaims(); len(claims) == 0 && rn.autoscale != nil || len(claims) > 0 && time.Since(claims[len(claims)-1].Created) < settleAfterClaims {
		return false
	}
	return nodesSettled(recs, v, rn.harness.Off())
}

// quiet reports whether Options.QuietFor has passed since a node's record last changed.
func (rn *run) quiet(recs []record.NodeRecord) bool {
	if rn.Opts.QuietFor <= 0 {
		return false
	}
	var b strings.Builder
	for _, rec := range recs {
		fmt.Fprintf(&b, "%s %d %d %d %d %d %d %d %d %d %d;", rec.Name, rec.Tainted.RV, rec.Released.RV, rec.Deleted.RV, rec.InitReady.RV,
			len(rec.Bindings), len(rec.Reboots), len(rec.Retainted), len(rec.CompletedAt), len(rec.LostTaints), len(rec.Unready))
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if p := b.String(); p != rn.recordsSeen || rn.recordsSince.IsZero() {
		rn.recordsSeen, rn.recordsSince = p, time.Now()
	}
	return time.Since(rn.recordsSince) >= rn.Opts.QuietFor
}

// nodesSettled: every gated node is either released or was never tainted but is already
// serving (the gate had no chance at it), no node re-gated after its last reboot is still
// warming up, and no rebooted node whose init Pods are Ready again on the new boot still
// carries the taint. The gate releases that one a moment after the Pods it waits for; a run
// that ended when the last workload Pod bound elsewhere judged it held for good, and one
// that ended during the warm-up saw the Pods Ready after the gate had stopped (the soak's
// rule-renamed-reboot seed 6). Without a gate nothing is released, so there it is enough
// that the init Pods are ready.
func nodesSettled(recs []record.NodeRecord, v check.Verdict, gateOff bool) bool {
	for _, rec := range recs {
		if !rec.Gated || !rec.Deleted.IsZero() {
			continue
		}
		if gateOff {
			if rec.InitReady.IsZero() {
				return false
			}
			continue
		}
		if rec.Released.IsZero() && rec.Tainted.IsZero() && !rec.HasWorkload() {
			return false
		}
		if n := len(rec.Reboots); n > 0 && !rec.Reboots[n-1].Regated.IsZero() && rec.Reboots[n-1].Reinit.IsZero() {
			return false
		}
	}
	return !slices.ContainsFunc(v.Violations, func(x check.Violation) bool { return x.Kind == check.KindHeldAfterReinit })
}

// caughtEarly: the run is a negative control (Options.StopWhenCaught) and the recorder
// already shows its violation, of a kind no later event undoes: a held node the autoscaler
// deleted stays deleted, and a Pod bound early stays bound early. Karpenter's control of
// karpenter-replace-consolidation showed its catch, then ran to its 5-minute timeout.
func (rn *run) caughtEarly() bool {
	var found []check.Violation
	switch rn.Opts.StopWhenCaught {
	case check.KindDisruptedWhileHeld:
		if rn.autoscale == nil {
			return false
		}
		found = check.DisruptedWhileHeld(rn.recorder.Snapshot(), rn.start, rn.holdingTaints())
	case check.KindEarlyPod:
		found = check.Check(rn.recorder.Snapshot(), rn.start, rn.bounds()).Violations
	default:
		return false
	}
	return slices.ContainsFunc(found, func(v check.Violation) bool { return v.Kind == rn.Opts.StopWhenCaught })
}

// waitBound waits until every workload replica asked for so far is bound (false: ctx ended
// first), for a step that is AfterBound and for a late gate that is GateStartsAfterBound.
func (rn *run) waitBound(ctx context.Context) bool {
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool { return check.WorkloadPods(recs) >= rn.state.WantPods() })
}

// waitReleased waits until every gated node that has joined is released (false: ctx ended
// first), for a step that is AfterReleased.
func (rn *run) waitReleased(ctx context.Context) bool {
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool { return check.Held(recs) == 0 })
}

// waitRegated waits until every node of the last reboot step that ran carries a gating
// rule's taint again since its reboot (false: ctx ended first), for a step that is
// AfterRegated.
func (rn *run) waitRegated(ctx context.Context) bool {
	rebooted := rn.state.Rebooted()
	return rn.waitFor(ctx, func(recs []record.NodeRecord) bool {
		for i := range recs {
			if n := len(recs[i].Reboots); slices.Contains(rebooted, recs[i].Name) && (n == 0 || recs[i].Reboots[n-1].Regated.IsZero()) {
				return false
			}
		}
		return true
	})
}

// waitFor polls the recorder until done holds (false: ctx ended first). It polls as
// waitSettled does, but asks only done instead of judging every invariant at each tick.
func (rn *run) waitFor(ctx context.Context, done func([]record.NodeRecord) bool) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if done(rn.recorder.Snapshot()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// progress reports the run's state to Opts.Progress: as data to a report.ProgressReceiver,
// else as a text line.
func (rn *run) progress(phase report.Phase) {
	v := check.Check(rn.recorder.Snapshot(), rn.start, rn.bounds())
	joined, refused := rn.state.Registrations()
	p := report.Progress{Scenario: rn.sc.Name, Seed: rn.seed, Phase: phase, Elapsed: time.Since(rn.start), Joined: joined,
		Gated: v.Gated, Released: v.Released, Early: check.ConfirmedEarly(v.Violations, rn.recorder.NodeRV()), Refused: refused,
		Nodes: rn.sc.JoinCount()}
	if rn.sc.Autoscaler != nil {
		p.Nodes = max(rn.sc.Expect.NodeClaims, v.Gated) // the autoscaler's nodes, as many as needed
	}
	if r, ok := rn.Opts.Progress.(report.ProgressReceiver); ok {
		r.Progress(p)
		return
	}
	fmt.Fprintln(rn.Opts.Progress, p)
}

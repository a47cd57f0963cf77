package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/objects"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Judging a run: sim/check decides, over the records and what was observed; this file only
// gathers them.

// bounds are the limits of this run: the scenario's release bound and the gate's holds.
func (rn *run) bounds() check.Bounds {
	b := check.Bounds{ReleasedWithin: rn.sc.Expect.ReleasedWithin, MinHold: rn.cfg.MinHold.Duration, RetaintWithin: rn.sc.Expect.RetaintWithin}
	for _, r := range rn.cfg.Enforced() {
		if r.Mode == rule.Startup {
			b.StartupTaints = append(b.StartupTaints, r.Taint.Key+":"+string(r.Taint.Effect))
		}
	}
	if rn.cfg.TimeoutPolicy == rule.TimeoutRelease {
		b.TimeoutRelease = rn.cfg.MaxHold.Duration
	}
	return b
}

// holdingTaints are the startup rules' taints (key:Effect), with the keys the timeline's
// edits give them: a node that carries one is held.
func (rn *run) holdingTaints() []string {
	out := rn.bounds().StartupTaints
	startup := slices.DeleteFunc(rn.cfg.Enforced(), func(r *rule.Rule) bool { return r.Mode != rule.Startup })
	for _, t := range rn.sc.EditTaints(startup) {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

// replaceBudgets are the budgets of the rules that replace nodes, by rule name.
func (rn *run) replaceBudgets() map[string]check.ReplaceBudget {
	out := map[string]check.ReplaceBudget{}
	for _, r := range rn.cfg.EffectiveRules() {
		if r.TimeoutPolicy == rule.TimeoutReplace {
			out[r.Name] = check.ReplaceBudget{MaxHold: r.MaxHold.Duration, MaxReplacing: r.MaxReplacing}
		}
	}
	return out
}

// judge checks the invariants and compares them with the scenario's expectations.
func (rn *run) judge() *report.Result {
	recs := rn.recorder.Snapshot()
	v := check.Check(recs, rn.start, rn.bounds())
	more, replaced := check.Conditions(recs, rn.start, time.Now(), rn.sc.Expect)
	v.Violations = append(v.Violations, more...)
	claims := rn.nodeClaims()
	v.Violations = append(v.Violations, check.NodeClaims(claims, rn.sc.Expect.NodeClaims, rn.start)...)
	if rn.autoscale != nil {
		// Only the autoscaler deletes nodes in such a run (the cleanup comes after).
		v.Violations = append(v.Violations, check.DisruptedWhileHeld(recs, rn.start, rn.holdingTaints())...)
	}
	v.Violations = append(v.Violations, check.Replacements(recs, rn.start, rn.replaceBudgets())...)
	rn.mu.Lock()
	v.Violations = append(v.Violations, rn.stranded...)
	rn.mu.Unlock()
	v.Violations = append(v.Violations, rn.state.PoolRefused()...)
	v.Violations = append(v.Violations, check.Suspended(rn.recorder.Suspensions(), func(m record.Mark) int64 { return m.Time.Sub(rn.start).Milliseconds() })...)
	obs := rn.observed(v, recs)
	res := &report.Result{
		Name: rn.sc.Name, File: rn.sc.File, Description: rn.sc.Description, Gate: string(rn.Opts.Gate), Seed: rn.seed,
		Nodes: len(recs), WorkloadPods: v.WorkloadPods, Violations: v.Violations, Released: v.Released, Stuck: v.Stuck,
		ReleaseLatencyMS: check.PercentilesOf(v.ReleaseLatency), DurationMS: time.Since(rn.start).Milliseconds(),
		Counters: obs.Counters, WatchCuts: int(rn.tally.WatchCuts.Load()), Errors: obs.Errors,
		Records: recs, Start: rn.start,
		ReleaseLatency: v.ReleaseLatency, FaultWindows: rn.sc.FaultWindows(),
	}
	if res.Violations == nil {
		res.Violations = []check.Violation{}
	}
	if len(v.RetaintLatency) > 0 {
		p := check.PercentilesOf(v.RetaintLatency)
		res.RetaintLatencyMS = &p
	}
	res.BoundWhileUnready = v.BoundWhileUnready
	for _, d := range replaced {
		res.ReplacementMS = append(res.ReplacementMS, d.Milliseconds())
	}
	if marked := check.Replaced(recs); marked > 0 {
		back := check.ReplacementReleases(recs)
		for _, d := range back {
			res.ReplaceReleaseMS = append(res.ReplaceReleaseMS, d.Milliseconds())
		}
		p := check.PercentilesOf(back)
		res.Notes = append(res.Notes, fmt.Sprintf("replaced: %d; a replacement released for %d of them, p50 %.0fms p99 %.0fms after the mark", marked, len(back), p.P50, p.P99))
	}
	hold := check.PercentilesOf(v.Hold)
	res.HoldMS = report.HoldPercentiles{P50: hold.P50, P99: hold.P99}
	rn.mu.Lock()
	res.Notes = append([]string(nil), rn.notes...)
	rn.mu.Unlock()
	if rn.autoscale != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("NodeClaims created: %d of %d needed; Pods early: %d", len(claims), rn.sc.Expect.NodeClaims, check.ConfirmedEarly(v.Violations, math.MaxUint64)))
	}
	if v.Reboots > 0 {
		p := check.PercentilesOf(v.RegateLatency)
		res.Notes = append(res.Notes, fmt.Sprintf("reboots: %d; taint back after %d of them, p50 %.0fms p99 %.0fms after the new boot ID; %d workload Pods bound before re-initialisation",
			v.Reboots, len(v.RegateLatency), p.P50, p.P99, v.BoundBeforeReinit))
	}
	res.Failures = check.Expectations(v, rn.sc.Expect, obs)
	res.Passed = len(res.Failures) == 0
	if !res.Passed {
		res.Reproduce = rn.reproduce()
	}
	return res
}

// reproduce is the command that runs this scenario again with this run's seed.
func (rn *run) reproduce() string {
	return fmt.Sprintf("go run ./cmd/simulate run --gate %s --seed %d %s", rn.Opts.Gate, rn.seed, rn.sc.File)
}

// observed gathers what the run saw beyond the records: counters, the expected Events, and
// the simulator's own errors.
func (rn *run) observed(v check.Verdict, recs []record.NodeRecord) check.Observed {
	obs := check.Observed{Events: map[string]int{}}
	rn.mu.Lock()
	obs.Errors = append([]string(nil), rn.errs...)
	rn.mu.Unlock()
	_, obs.Counters.RegistrationsRefused = rn.state.Registrations()
	obs.Counters.BypassDenied = int(rn.tally.BypassDenied.Load())
	obs.Counters.BypassCreated = int(rn.tally.BypassCreated.Load())
	obs.Counters.EarlyToleratingPods = v.EarlyTolerating
	obs.Counters.Backfilled = check.Backfilled(recs)
	obs.NodeWrites, obs.RuleReleases = int(rn.harness.NodeWrites()), check.RuleReleases(recs)
	obs.Replaced = check.Replaced(recs)
	reasons := append([]string(nil), rn.sc.Expect.Events...)
	for _, m := range rn.sc.Expect.EventsMatch {
		reasons = append(reasons, m.Reason, m.Like)
	}
	if len(reasons) > 0 {
		nodes := rn.sc.NodeNames()
		for i := range recs { // an autoscaler's nodes, which the scenario does not name
			nodes[recs[i].Name] = true
		}
		deadline := rn.start.Add(rn.sc.Timeout)
		rn.mu.Lock()
		if rn.stoppedCaught {
			deadline = time.Now() // counted once: the run stopped at its catch, not settled
		}
		rn.mu.Unlock()
		obs.Events, obs.EventsErr = objects.AwaitEvents(reasons, deadline, time.Second, func(reason string) (int, error) {
			return rn.objects().CountEvents(reason, nodes, rn.start)
		})
	}
	return obs
}

// judgeEnd reads the scenario's nodes and Pods as the run left them and judges them by the
// gate's config in force at the end (check.Stranded).
func (rn *run) judgeEnd(ctx context.Context) error {
	if rn.harness.Off() {
		return nil
	}
	nodes, err := rn.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: scenario.Label + "=" + rn.sc.Name})
	if err != nil {
		return fmt.Errorf("listing the run's nodes: %w", err)
	}
	pods, err := rn.client.CoreV1().Pods(rn.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the run's Pods: %w", err)
	}
	ptrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		ptrs[i] = &pods.Items[i]
	}
	cfg := rn.harness.Config()
	if !cfg.Validated() {
		return nil // the gate never started (a late install that the run did not reach)
	}
	stranded := check.Stranded(nodes.Items, ptrs, &cfg)
	rn.mu.Lock()
	rn.stranded = stranded
	rn.mu.Unlock()
	return nil
}

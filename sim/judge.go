package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate"
)

// Judging a run: invariants from the checker, then the scenario's expectations.

// bounds are the limits of this run: the scenario's release bound and the gate's holds.
func (x *run) bounds() Bounds {
	b := Bounds{ReleasedWithin: x.sc.Expect.ReleasedWithin, MinHold: x.cfg.MinHold.Duration}
	if x.cfg.TimeoutPolicy == gate.TimeoutRelease {
		b.TimeoutRelease = x.cfg.MaxHold.Duration
	}
	return b
}

// judge checks the invariants and compares them with the scenario's expectations.
func (x *run) judge() *Result {
	recs := x.recorder.Snapshot()
	v := Check(recs, x.start, x.bounds())
	res := &Result{
		Name: x.sc.Name, File: x.sc.File, Description: x.sc.Description, Gate: string(x.Opts.Gate), Seed: x.Opts.Seed,
		Nodes: len(recs), WorkloadPods: v.WorkloadPods, Violations: v.Violations, Released: v.Released, Stuck: v.Stuck,
		ReleaseLatencyMS: percentiles(v.ReleaseLatency), DurationMS: time.Since(x.start).Milliseconds(),
		records: recs, start: x.start,
	}
	if res.Violations == nil {
		res.Violations = []Violation{}
	}
	hold := percentiles(v.Hold)
	res.HoldMS = HoldPercentiles{P50: hold.P50, P99: hold.P99}
	x.mu.Lock()
	res.Errors = append([]string(nil), x.errs...)
	res.Notes = append([]string(nil), x.notes...)
	res.Counters = x.counters.Counters
	res.Counters.EarlyToleratingPods = v.EarlyTolerating
	res.WatchCuts = x.counters.watchCuts
	x.mu.Unlock()
	res.Counters.Backfilled = backfilled(recs)
	res.Failures = x.expectations(v, res)
	res.Passed = len(res.Failures) == 0
	if !res.Passed {
		res.Reproduce = fmt.Sprintf("go run ./cmd/simulate run --gate %s --seed %d %s", x.Opts.Gate, x.Opts.Seed, x.sc.File)
	}
	return res
}

// expectations compares a run with the scenario's expect.
func (x *run) expectations(v Verdict, res *Result) []string {
	var fails []string
	exp := x.sc.Expect
	have := kindsOf(v.Violations)
	switch {
	case exp.Violations == "none" && len(v.Violations) > 0:
		fails = append(fails, fmt.Sprintf("expected no violations, found %d (%s)", len(v.Violations), have))
	case exp.Violations == "some" && len(v.Violations) == 0:
		fails = append(fails, "expected violations (negative control), found none: the checker must catch this")
	case exp.Violations == "some" && len(exp.Kinds) > 0:
		want := append([]string(nil), exp.Kinds...)
		sort.Strings(want)
		if strings.Join(want, ",") != have {
			fails = append(fails, fmt.Sprintf("expected exactly the violation kinds %v, found %q", want, have))
		}
	}
	if v.Stuck != exp.Stuck {
		fails = append(fails, fmt.Sprintf("%d gated nodes never released, expected %d", v.Stuck, exp.Stuck))
	}
	c := res.Counters
	for _, b := range []struct {
		name      string
		got, want int
	}{
		{"early tolerating pods", c.EarlyToleratingPods, exp.AtLeast.EarlyToleratingPods},
		{"refused registrations", c.RegistrationsRefused, exp.AtLeast.RegistrationsRefused},
		{"denied bypass pods", c.BypassDenied, exp.AtLeast.BypassDenied},
		{"created bypass pods", c.BypassCreated, exp.AtLeast.BypassCreated},
		{"backfilled nodes", c.Backfilled, exp.AtLeast.Backfilled},
	} {
		if b.got < b.want {
			fails = append(fails, fmt.Sprintf("%s: %d, expected at least %d", b.name, b.got, b.want))
		}
	}
	for _, reason := range exp.Events {
		if n, err := x.countEvents(reason); err != nil || n == 0 {
			fails = append(fails, fmt.Sprintf("expected a %s event, found none (%v)", reason, err))
		}
	}
	if len(res.Errors) > 0 {
		fails = append(fails, fmt.Sprintf("%d simulator errors, first: %s", len(res.Errors), res.Errors[0]))
	}
	return fails
}

// backfilled counts nodes that came up untainted and were tainted afterwards.
func backfilled(recs []NodeRecord) int {
	n := 0
	for _, r := range recs {
		if !r.TaintedAtCreate && !r.Tainted.IsZero() {
			n++
		}
	}
	return n
}

// countEvents counts events.k8s.io Events with this reason about the scenario's objects:
// its nodes (events about Nodes land in "default") and its namespace.
func (x *run) countEvents(reason string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := x.client.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Namespace == x.ns || strings.HasPrefix(e.Regarding.Name, x.sc.Name+"-") {
			n++
		}
	}
	return n, nil
}

func kindsOf(vs []Violation) string {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Kind] = true
	}
	kinds := make([]string, 0, len(seen))
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ",")
}

package explore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/sim/scenario"
)

// Plan lists the cases of an exploration, base by base: crash points at up to perKind of the
// writes of the base's unperturbed run (every write when they are fewer, else spread evenly
// over them), before and after, and perKind seeded draws of every other kind; alonePerKind
// instead for a base that runs Alone, whose cases take the plane one at a time. writes holds
// each base's writes; a base missing from it has no crash points.
func Plan(bases []*scenario.Scenario, writes map[string]int, perKind, alonePerKind int, seed uint64) []Case {
	var out []Case
	for _, base := range bases {
		if !Applies(base) {
			continue
		}
		perKind := perKind
		if Alone(base) {
			perKind = alonePerKind
		}
		for _, kind := range Kinds {
			for i := 0; i < perKind; i++ {
				index := i + 1
				if kind == CrashBefore || kind == CrashAfter {
					w := writes[base.Name]
					if w == 0 || i >= w {
						break
					}
					index = 1 + i*w/min(w, perKind)
				}
				if c, ok := Make(base, kind, index, seed+uint64(i), writes[base.Name]); ok {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Result is one case and what its run showed (or the error that kept it from running).
type Result struct {
	Case    Case    `json:"case"`
	Outcome Outcome `json:"outcome"`
	Err     string  `json:"error,omitempty"`
	// Control is the invariant a negative control must break ("": not a control).
	Control string `json:"control,omitempty"`
	// Seconds is how long the run took, from its start to its judgement, its wait for the
	// plane left out.
	Seconds float64 `json:"seconds"`
}

// Caught reports whether a negative control broke its invariant.
func (r Result) Caught() bool {
	if r.Control == "" || r.Err != "" {
		return false
	}
	if r.Control == "writes-per-node" {
		return r.Outcome.NodeWrites > MaxWritesPerNode
	}
	return slices.ContainsFunc(r.Outcome.Failures, func(f string) bool { return strings.Contains(f, r.Control) })
}

// RunAll runs the cases with run, up to parallel at once, a case that runs Alone by itself;
// the cases of one base run one after another, as their node names are the base's. It stops starting cases when ctx
// ends, and returns the results in case order.
func RunAll(ctx context.Context, cases []Case, parallel int, run Runner, progress io.Writer) []Result {
	return RunBeside(ctx, cases, parallel, run, nil, progress)
}

// RunBeside is RunAll with a second plane: the cases that run Alone run there with alone,
// one at a time, beside the others, instead of taking the shared plane from them (nil: as
// RunAll). Each holds one of the parallel slots while it runs.
func RunBeside(ctx context.Context, cases []Case, parallel int, run, alone Runner, progress io.Writer) []Result {
	results := make([]Result, len(cases))
	lanes := map[string][]int{}
	var order []string
	for i, c := range cases {
		if _, ok := lanes[c.Base]; !ok {
			order = append(order, c.Base)
		}
		lanes[c.Base] = append(lanes[c.Base], i)
	}
	sem := make(chan struct{}, max(parallel, 1))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		// plane is held shared by a case that shares the plane, and alone by one that runs
		// Alone, which waits for the others to finish and keeps new ones out meanwhile;
		// beside is the second plane's, held by one case at a time.
		plane  sync.RWMutex
		beside sync.Mutex
	)
	for _, base := range order {
		wg.Go(func() {
			for _, i := range lanes[base] {
				if ctx.Err() != nil {
					return
				}
				sem <- struct{}{}
				lock, unlock, on := plane.RLock, plane.RUnlock, run
				switch {
				case Alone(cases[i].Scenario) && alone != nil:
					lock, unlock, on = beside.Lock, beside.Unlock, alone
				case Alone(cases[i].Scenario):
					lock, unlock = plane.Lock, plane.Unlock
				}
				lock()
				if ctx.Err() != nil {
					// Interrupted while waiting for a slot: the case is not drawn, not failed.
					unlock()
					<-sem
					return
				}
				start := time.Now()
				o, err := on(ctx, cases[i])
				took := time.Since(start)
				unlock()
				<-sem
				results[i] = Result{Case: cases[i], Outcome: o, Seconds: took.Seconds()}
				if err != nil {
					results[i].Err = err.Error()
				}
				mu.Lock()
				done++
				if progress != nil {
					verdict := "ok"
					if results[i].Violated() {
						verdict = "VIOLATION"
					}
					fmt.Fprintf(progress, "%4d/%d %-9s %5.1fs %-20s %-36s %s\n", done, len(cases), verdict, took.Seconds(), cases[i].Kind, cases[i].Base, cases[i].What)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return results
}

// Violated reports whether the case's run broke an invariant, or could not be carried out.
func (r Result) Violated() bool { return r.Err != "" || r.Outcome.Violated() }

// Controls are the negative controls of the invariants the exploration judges, built from
// the scenarios they need (by name, from all): each must be caught. A control whose
// scenario is missing is left out.
func Controls(all []*scenario.Scenario) []Result {
	byName := map[string]*scenario.Scenario{}
	for _, sc := range all {
		byName[sc.Name] = sc
	}
	var out []Result
	add := func(invariant, name, what string, mutate func(sc *scenario.Scenario)) *Result {
		base, ok := byName[name]
		if !ok {
			return nil
		}
		sc := prepare(base)
		mutate(sc)
		out = append(out, Result{Control: invariant, Case: Case{Base: name, Kind: "control", Seed: 1, What: what, Scenario: sc}})
		return &out[len(out)-1]
	}
	if r := add("early-pod", "basic-join", "no gate at all", func(*scenario.Scenario) {}); r != nil {
		r.Case.Off = true
	}
	add("stranded", "rule-removed-while-holding", "the orphan grace past the run's end", func(sc *scenario.Scenario) {
		sc.GateConfig.OrphanGracePeriod.Duration = time.Hour
	})
	add("held-after-reinit", "node-reboot-regate", "the rule suspended once the nodes are re-gated", func(sc *scenario.Scenario) {
		sc.Timeline = append(sc.Timeline, scenario.Step{AfterRegated: true, EditRule: &scenario.EditRule{Rule: "default", Suspend: ptr.To(true)}})
	})
	add("foreign-taint-lost", "foreign-taint-writers", "the foreign writers unguarded", func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if w := sc.Timeline[i].TaintWriters; w != nil {
				w.Unguarded = true
			}
		}
	})
	// The flap is slow enough for a gate on a loaded machine to follow most of it, and long
	// enough that half of it is still well past the bound: at 100ms for 8s, a machine busy
	// with an explore and .ci/run at once saw 24 writes, the bound itself.
	add("writes-per-node", "continuous-flap", "the continuous rule with no settle time, its agent flapping every 400ms for 30s", func(sc *scenario.Scenario) {
		for i := range sc.GateConfig.Rules {
			sc.GateConfig.Rules[i].SettleTime.Duration = time.Millisecond
		}
		for i := range sc.Timeline {
			if p := sc.Timeline[i].InitPod; p != nil && p.State == scenario.InitPodFlap {
				p.Every, p.Duration = 400*time.Millisecond, 30*time.Second
			}
		}
	})
	return out
}

// Table writes the exploration's results as a Markdown table, a row per kind (and one for
// the controls), then every violation with the command that replays it.
func Table(w io.Writer, results []Result) {
	type row struct{ runs, violations int }
	rows := map[Kind]*row{}
	bases := map[Kind]map[string]bool{}
	var bad []Result
	for _, r := range results {
		if r.Control != "" {
			continue
		}
		k := r.Case.Kind
		if rows[k] == nil {
			rows[k], bases[k] = &row{}, map[string]bool{}
		}
		rows[k].runs++
		bases[k][r.Case.Base] = true
		if r.Violated() {
			rows[k].violations++
			bad = append(bad, r)
		}
	}
	fmt.Fprintln(w, "| perturbation | scenarios | runs | violations |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	total, totalBad := 0, 0
	for _, k := range append([]Kind{Baseline}, Kinds...) {
		if r := rows[k]; r != nil {
			fmt.Fprintf(w, "| %s | %d | %d | %d |\n", k, len(bases[k]), r.runs, r.violations)
			total, totalBad = total+r.runs, totalBad+r.violations
		}
	}
	fmt.Fprintf(w, "| **all** | | **%d** | **%d** |\n", total, totalBad)
	writeFields(w, results)
	writeTimedOut(w, results)
	var controls []string
	for _, r := range results {
		if r.Control != "" {
			verdict := "caught"
			if !r.Caught() {
				verdict = "NOT CAUGHT"
			}
			controls = append(controls, fmt.Sprintf("| %s | %s: %s | %s |", r.Control, r.Case.Base, r.Case.What, verdict))
		}
	}
	if len(controls) > 0 {
		fmt.Fprintln(w, "\n| invariant | negative control | |\n|---|---|---|")
		for _, c := range controls {
			fmt.Fprintln(w, c)
		}
	}
	sort.SliceStable(bad, func(i, j int) bool { return bad[i].Case.Kind < bad[j].Case.Kind })
	for _, r := range bad {
		fmt.Fprintf(w, "\n- %s %s (%s), seed %d: %s\n  replay: `%s`\n", r.Case.Kind, r.Case.Base, r.Case.What, r.Case.Seed, failure(r), r.Case.Replay())
	}
}

// writeFields writes, for the config transitions, how many runs edited each field (a run of
// a sequence counts once for each field it edits) and how many of those broke an invariant.
func writeFields(w io.Writer, results []Result) {
	runs, bad := map[string]int{}, map[string]int{}
	edits := 0
	for _, r := range results {
		if r.Control != "" || r.Case.Kind != Transition {
			continue
		}
		edits += len(r.Case.Fields)
		for _, f := range r.Case.Fields {
			runs[f]++
			if r.Violated() {
				bad[f]++
			}
		}
	}
	if edits == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d generated config edits:\n\n| field | runs | violations |\n|---|---:|---:|\n", edits)
	for _, f := range Fields {
		fmt.Fprintf(w, "| %s | %d | %d |\n", f, runs[f], bad[f])
	}
}

// writeTimedOut says how many Pod guard calls the apiserver let through because they were
// not answered in time, and in how many runs: a guard that answers too late fails open.
func writeTimedOut(w io.Writer, results []Result) {
	calls, runs, bad := 0, 0, 0
	for _, r := range results {
		if n := r.Outcome.GuardTimedOut; n > 0 && r.Control == "" {
			calls, runs = calls+n, runs+1
			if r.Violated() {
				bad++
			}
		}
	}
	if calls > 0 {
		fmt.Fprintf(w, "\nThe apiserver let %d Pod guard calls through unanswered in time, in %d runs (%d of them with a violation).\n", calls, runs, bad)
	}
}

// failure says in one line what a violating run showed.
func failure(r Result) string {
	switch {
	case r.Err != "":
		return "could not run: " + r.Err
	case r.Outcome.NodeWrites > MaxWritesPerNode:
		return fmt.Sprintf("%d writes to node %s (bound %d)", r.Outcome.NodeWrites, r.Outcome.Node, MaxWritesPerNode)
	}
	out := strings.Join(r.Outcome.Failures, "; ")
	if o := r.Outcome; o.GuardTimedOut+o.GuardUnreached > 0 {
		out += fmt.Sprintf(" (the apiserver let %d Pod guard calls through unanswered, %d of them timed out)", o.GuardTimedOut+o.GuardUnreached, o.GuardTimedOut)
	}
	return out
}

// Baseline is the kind of an unperturbed run, which measures a base's Node writes (the
// range of its crash points).
const Baseline Kind = "baseline"

// Baselines runs every base the explorer perturbs once, unperturbed, and returns the Node
// writes of each (a base whose run failed, or could not run, is missing: its crash points
// would have no range). Its results are returned too: an unperturbed run that fails is a
// finding of its own.
func Baselines(ctx context.Context, bases []*scenario.Scenario, seed uint64, parallel int, run, alone Runner, progress io.Writer) (map[string]int, []Result) {
	var cases []Case
	for _, base := range bases {
		if Applies(base) {
			cases = append(cases, Case{Base: base.Name, Kind: Baseline, Seed: seed, What: "unperturbed", Scenario: prepare(base)})
		}
	}
	results := RunBeside(ctx, cases, parallel, run, alone, progress)
	writes := map[string]int{}
	for _, r := range results {
		if !r.Violated() && r.Outcome.Writes > 0 {
			writes[r.Case.Base] = r.Outcome.Writes
		}
	}
	return writes, results
}

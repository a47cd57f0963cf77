package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/explore"
	"github.com/startupgate/startupgate/sim/scenario"
)

type exploreOpts struct {
	perKind, parallel    int
	alonePerKind         int
	seed                 uint64
	out, jsonOut, replay string
	gateLog              string
	noControls           bool
	kinds                string
}

func exploreFlags(out io.Writer, o *exploreOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&o.perKind, "per-kind", 4, "cases of each kind for each scenario: crash points at up to this many writes (before and after), and this many seeded draws of every other kind")
	fs.IntVar(&o.alonePerKind, "alone-per-kind", 1, "cases of each kind for each scenario that needs a plane to itself (an autoscaler's: Karpenter), which run one at a time on a second plane beside the others; 0 leaves those scenarios out")
	fs.IntVar(&o.parallel, "parallel", 4, "run up to this many cases at once (one scenario's cases one after another)")
	fs.Uint64Var(&o.seed, "seed", 1, "first seed of the draws; case i of a kind uses seed+i")
	fs.StringVar(&o.out, "out", "", "write the table (Markdown) here as well")
	fs.StringVar(&o.jsonOut, "json", "", "write every case and its outcome here (JSON)")
	fs.StringVar(&o.replay, "replay", "", "run one case again, KIND:INDEX, with --seed as its seed (the table's replay commands)")
	fs.StringVar(&o.gateLog, "gate-log", "", "write the gates' logs here (default: a temporary file, named at the start)")
	fs.BoolVar(&o.noControls, "no-controls", false, "skip the negative controls")
	fs.StringVar(&o.kinds, "kinds", "", "only these kinds of perturbation, comma-separated (crash-before-write, crash-after-write, stale-node-view, stale-pod-view, relist, config-transition); default every kind")
	return fs
}

// runExplore generates perturbed runs of the scenarios (sim/explore) and judges them on the
// embedded plane: crash points at the gate's Node writes, stale and re-listed views, config
// transitions. It prints a table of kinds, runs and violations, and exits 1 on a violation
// or a negative control not caught.
func runExplore(args []string, stdout, stderr io.Writer) (int, error) {
	var o exploreOpts
	fs := exploreFlags(stderr, &o)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: simulate explore [flags] FILE|DIR...\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() == 0 {
		return 2, fmt.Errorf("explore: name scenario files or directories")
	}
	scs, err := scenario.LoadAll(fs.Args())
	if err != nil {
		return 2, err
	}
	logPath, err := setLogs(o.gateLog, false, stderr)
	if err != nil {
		return 2, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	plane := &controlplane.Embedded{}
	fmt.Fprintf(stdout, "starting embedded control plane (logs: %s)\n", logPath)
	rc, err := plane.Start(ctx)
	if err != nil {
		return 1, err
	}
	defer func() { _ = plane.Stop() }()
	run := explore.SimRunner(rc, plane)
	if o.replay != "" {
		return replay(ctx, o, scs, run, stdout)
	}

	if o.alonePerKind == 0 {
		scs = slices.DeleteFunc(scs, explore.Alone)
	}
	// An autoscaler's cases get a plane of their own, beside the shared one: on the shared
	// plane each would wait for every other case to finish, and keep new ones out.
	var alone explore.Runner
	if slices.ContainsFunc(scs, explore.Alone) {
		second := &controlplane.Embedded{}
		fmt.Fprintf(stdout, "starting a second embedded control plane for the autoscaler's scenarios\n")
		rc2, err := second.Start(ctx)
		if err != nil {
			return 1, err
		}
		defer func() { _ = second.Stop() }()
		alone = explore.SimRunner(rc2, second)
	}
	kinds := strings.Split(o.kinds, ",")
	only := func(k explore.Kind) bool { return o.kinds == "" || slices.Contains(kinds, string(k)) }
	// The unperturbed runs count the writes the crash points range over; without crash
	// points they are not needed.
	var (
		writes  = map[string]int{}
		results []explore.Result
	)
	if only(explore.CrashBefore) || only(explore.CrashAfter) {
		writes, results = explore.Baselines(ctx, scs, o.seed, o.parallel, run, alone, stdout)
	}
	cases := slices.DeleteFunc(explore.Plan(scs, writes, o.perKind, o.alonePerKind, o.seed), func(c explore.Case) bool { return !only(c.Kind) })
	fmt.Fprintf(stdout, "%d cases over %d scenario(s), %d at a time\n", len(cases), len(scs), o.parallel)
	results = append(results, explore.RunBeside(ctx, cases, o.parallel, run, alone, stdout)...)
	if !o.noControls {
		results = append(results, runControls(ctx, scs, o.parallel, run, stdout)...)
	}
	return exploreReport(o, results, stdout)
}

// runControls runs the negative controls, which must each break their invariant.
func runControls(ctx context.Context, scs []*scenario.Scenario, parallel int, run explore.Runner, stdout io.Writer) []explore.Result {
	controls := explore.Controls(scs)
	cases := make([]explore.Case, len(controls))
	for i, c := range controls {
		cases[i] = c.Case
	}
	fmt.Fprintf(stdout, "%d negative controls\n", len(cases))
	ran := explore.RunAll(ctx, cases, parallel, run, stdout)
	for i := range ran {
		ran[i].Control = controls[i].Control
	}
	return ran
}

// exploreReport prints the table and writes the files, and says whether the exploration passed.
func exploreReport(o exploreOpts, results []explore.Result, stdout io.Writer) (int, error) {
	var sb strings.Builder
	explore.Table(&sb, results)
	fmt.Fprint(stdout, "\n"+sb.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(sb.String()), 0o644); err != nil {
			return 1, err
		}
	}
	if o.jsonOut != "" {
		raw, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return 1, err
		}
		if err := os.WriteFile(o.jsonOut, raw, 0o644); err != nil {
			return 1, err
		}
	}
	for _, r := range results {
		if r.Control == "" && r.Violated() || r.Control != "" && !r.Caught() {
			return 1, nil
		}
	}
	return 0, nil
}

// replay runs the one case --replay names, of the one scenario given.
func replay(ctx context.Context, o exploreOpts, scs []*scenario.Scenario, run explore.Runner, stdout io.Writer) (int, error) {
	kind, index, ok := strings.Cut(o.replay, ":")
	i, err := strconv.Atoi(index)
	if !ok || err != nil || len(scs) != 1 {
		return 2, fmt.Errorf("--replay KIND:INDEX, with one scenario file")
	}
	c, ok := explore.Make(scs[0], explore.Kind(kind), i, o.seed, i)
	if !ok {
		return 2, fmt.Errorf("--replay %s: no such case for %s", o.replay, scs[0].Name)
	}
	fmt.Fprintf(stdout, "replaying %s %s: %s\n", c.Kind, c.Base, c.What)
	out, err := run(ctx, c)
	if err != nil {
		return 1, err
	}
	return exploreReport(o, []explore.Result{{Case: c, Outcome: out}}, stdout)
}

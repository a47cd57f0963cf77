package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/startupgate/startupgate/sim/bench"
	"github.com/startupgate/startupgate/sim/report"
)

// runBench runs the benchmark and writes DIR/bench.json, DIR/bench.md and DIR/bench.html.
// It exits 0 when the benchmark ran, whether or not every target was met: targets are
// figures to report, not assertions (the machines are shared and noisy).
func runBench(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "100,1000,5000", "burst sizes (nodes joining at once), comma-separated")
	ref := fs.Int("reference", 0, "size at which admission and the reactive peer run and the targets are judged (default: 1000 if listed, else the largest)")
	pods := fs.Int("pods", 100000, "workload Pods added for the gate's memory figure at the largest size")
	pairs := fs.Int("pairs", 3, "gate/floor pairs per burst size, on the same admission (the policy), run alternately")
	largestPairs := fs.Int("pairs-largest", 0, "gate/floor pairs at the largest size only (default: --pairs), to fit a run in its time")
	rates := fs.String("rates", "5,20,50", "paced join rates, nodes per second, comma-separated")
	pacedFor := fs.Duration("paced-for", time.Minute, "how long nodes join at each paced rate")
	zero := fs.Int("zero-jitter", 200, "nodes of the burst whose init Pods all turn Ready together (gate and floor, taken apart by stage)")
	workers := fs.String("compare-workers", "16", "gate --workers settings to run beside the shipped default at the reference size and in the zero-jitter burst, comma-separated (empty: none)")
	seed := fs.Uint64("seed", 1, "seed of every random choice")
	ownLabels := fs.Bool("own-labels", false, "the gate's rule waits for three components labelled as a GPU driver's, a CNI's and a CSI driver's charts label them (three Pod caches, no common key), for the memory figure of such a config; the floor still waits for the default component")
	skip := fs.String("skip", "", "phases not to run, comma-separated: reactive, webhook, zero-jitter, paced, binding-burst (what they measure reads \"not measured\")")
	only := fs.String("only", "", "run this phase alone instead of every phase: binding-burst")
	burstNodes := fs.Int("burst-nodes", 100, "binding-burst phase: nodes that join and are released before the Pods arrive")
	burstPods := fs.Int("burst-pods", 3000, "binding-burst phase: Pods created at once (a Deployment scaled from 0) once those nodes are released")
	burstExtra := fs.Int("burst-extra", 10, "binding-burst phase: more nodes joining as the Pods arrive, whose release latency during the burst is reported (0: none)")
	burstRounds := fs.Int("burst-rounds", 3, "binding-burst phase: rounds, each running every guard mode (guard-off, guard-startup, guard-reboot, guard-continuous) once, in rotated order")
	out := fs.String("out", "out", "directory for bench.json, bench.md, bench.html and the plane's and gate's logs")
	from := fs.String("from", "", "run nothing: write bench.md and bench.html from this bench.json")
	verbose := fs.Bool("v", false, "print the logs of client-go, klog and the in-process gate on stderr as well")
	var lf largeFlags
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: simulate bench [flags]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("bench: unexpected arguments %v", fs.Args())
	}
	if lf.sizes != "" {
		return runLarge(lf, *seed, *out, *verbose, stdout, stderr)
	}
	if *from != "" {
		rep, err := readBench(*from)
		if err != nil {
			return 1, err
		}
		return writeBench(rep, *out, stdout, false)
	}
	con := newConsole(stdout)
	defer con.Close()
	opts := bench.Options{Reference: *ref, Pods: *pods, Seed: *seed, Progress: con, Pairs: *pairs, LargestPairs: *largestPairs, PacedFor: *pacedFor, ZeroJitter: *zero, OwnLabels: *ownLabels,
		BurstNodes: *burstNodes, BurstPods: *burstPods, BurstExtra: *burstExtra, BurstRounds: *burstRounds}
	if *burstExtra == 0 {
		opts.BurstExtra = -1 // none (0 is the default's)
	}
	var err error
	if opts.Sizes, err = counts("--sizes", *sizes); err != nil {
		return 2, err
	}
	if opts.Rates, err = counts("--rates", *rates); err != nil {
		return 2, err
	}
	if strings.TrimSpace(*workers) == "" {
		opts.CompareWorkers = []int{} // none: only the shipped default runs
	} else if opts.CompareWorkers, err = counts("--compare-workers", *workers); err != nil {
		return 2, err
	}
	opts.Skip = map[string]bool{}
	for _, m := range strings.Split(*skip, ",") {
		switch m = strings.TrimSpace(m); m {
		case "":
		case bench.PhaseReactive, bench.PhaseWebhook, bench.PhaseZeroJitter, bench.PhasePaced, bench.PhaseBindingBurst:
			opts.Skip[m] = true
		default:
			return 2, fmt.Errorf("--skip: %q is not a phase that can be skipped (reactive, webhook, zero-jitter, paced, binding-burst)", m)
		}
	}
	switch opts.Only = strings.TrimSpace(*only); opts.Only {
	case "", bench.PhaseBindingBurst:
	default:
		return 2, fmt.Errorf("--only: %q is not a phase that can run alone (binding-burst)", opts.Only)
	}
	if opts.Only != "" && opts.Skip[opts.Only] {
		return 2, fmt.Errorf("--only %s and --skip %[1]s contradict each other", opts.Only)
	}
	if *burstNodes < 1 || *burstPods < 1 || *burstExtra < 0 || *burstRounds < 1 {
		return 2, fmt.Errorf("--burst-nodes, --burst-pods and --burst-rounds must be at least 1, --burst-extra at least 0")
	}
	if *pairs < 1 || *largestPairs < 0 || *zero < 1 || *pacedFor < time.Second {
		return 2, fmt.Errorf("--pairs and --zero-jitter must be at least 1, --paced-for at least 1s")
	}
	if *pods < 1 {
		return 2, fmt.Errorf("--pods must be at least 1")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return 1, err
	}
	opts.LogDir = *out
	logPath, err := setLogs(filepath.Join(*out, "bench-gate.log"), *verbose, stderr)
	if err != nil {
		return 2, err
	}
	fmt.Fprintf(con, "bench: logs in %s\n", logPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, opts)
	con.Close()
	if err != nil {
		return 1, err
	}
	return writeBench(rep, *out, stdout, true)
}

// counts parses a comma-separated list of positive integers.
func counts(flagName, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// writeBench writes DIR/bench.json (unless the report was read from one), bench.md and
// bench.html, and prints the Markdown.
func writeBench(rep *bench.Report, dir string, stdout io.Writer, withJSON bool) (int, error) {
	if withJSON {
		if err := rep.WriteJSON(filepath.Join(dir, "bench.json")); err != nil {
			return 1, err
		}
	}
	md := rep.String()
	if err := report.WriteFile(filepath.Join(dir, "bench.md"), []byte(md)); err != nil {
		return 1, err
	}
	if err := rep.WriteHTML(filepath.Join(dir, "bench.html")); err != nil {
		return 1, err
	}
	fmt.Fprint(stdout, "\n"+md+"\n"+filepath.Join(dir, "bench.html")+"\n")
	return 0, nil
}

// readBench reads a bench.json that simulate bench wrote.
func readBench(path string) (*bench.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rep := &bench.Report{}
	if err := json.Unmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rep, nil
}

// largeFlags are the large-cluster phase's flags: --large names its sizes and runs it
// instead of the benchmark's other phases.
type largeFlags struct {
	sizes                      string
	burst, workloads, failover int
	updates                    int
	idle                       time.Duration
	noFloor                    bool
	before                     string
}

func (lf *largeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.sizes, "large", "", "run the large-cluster phase instead: static node counts, comma-separated (the empty plane is measured first); writes bench-large.json and bench-large.md")
	fs.IntVar(&lf.burst, "large-burst", 1000, "large phase: nodes joining on top at each size")
	fs.IntVar(&lf.workloads, "large-workloads", 0, "large phase: workload Pods of each burst (default: a tenth of --large-burst)")
	fs.IntVar(&lf.failover, "large-failover", 200, "large phase: nodes joining during the leader failover at each size")
	fs.IntVar(&lf.updates, "large-updates", 5000, "large phase: static nodes that report their status once, to price a Node update in the gate")
	fs.DurationVar(&lf.idle, "large-idle", time.Minute, "large phase: how long the idle gate's CPU is read at each size")
	fs.BoolVar(&lf.noFloor, "large-no-floor", false, "large phase: leave out the floor bursts")
	fs.StringVar(&lf.before, "large-before-gate", "", "large phase: a gate binary to probe beside the one under test at every size (a change, before and after, in one run); needs STARTUPGATE_GATE_BINARY")
}

// runLarge runs the large-cluster phase and writes DIR/bench-large.json and .md. Like the
// benchmark, it exits 0 when it ran, whether or not a target was met.
func runLarge(lf largeFlags, seed uint64, out string, verbose bool, stdout, stderr io.Writer) (int, error) {
	sizes, err := counts("--large", lf.sizes)
	if err != nil {
		return 2, err
	}
	if lf.burst < 1 || lf.failover < 1 || lf.updates < 1 || lf.workloads < 0 || lf.idle < time.Second {
		return 2, fmt.Errorf("--large-burst, --large-failover and --large-updates must be at least 1, --large-idle at least 1s")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 1, err
	}
	logPath, err := setLogs(filepath.Join(out, "bench-large-gate.log"), verbose, stderr)
	if err != nil {
		return 2, err
	}
	con := newConsole(stdout)
	defer con.Close()
	fmt.Fprintf(con, "bench: logs in %s\n", logPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := bench.RunLarge(ctx, bench.LargeOptions{Sizes: sizes, Burst: lf.burst, Workloads: lf.workloads,
		Failover: lf.failover, Updates: lf.updates, Idle: lf.idle, NoFloor: lf.noFloor, BeforeGate: lf.before, Seed: seed, Progress: con, LogDir: out})
	con.Close()
	if rep == nil {
		return 1, runErr
	}
	// A partial report is written all the same: what was measured before the failure
	// is worth keeping, and the rest reads "not measured".
	if err := rep.WriteJSON(filepath.Join(out, "bench-large.json")); err != nil {
		return 1, err
	}
	md := rep.String()
	if err := report.WriteFile(filepath.Join(out, "bench-large.md"), []byte(md)); err != nil {
		return 1, err
	}
	fmt.Fprint(stdout, "\n"+md+"\n")
	if runErr != nil {
		return 1, runErr
	}
	return 0, nil
}

// Command simulate runs startupgate scenarios against a real control plane and checks that
// no workload Pod ever lands on a node before the gate releases it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/startupgate/startupgate/internal/jsonlog"
	"github.com/startupgate/startupgate/internal/version"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

const usage = `Usage:
  simulate list [DIR]
  simulate run [flags] FILE|DIR...
  simulate explore [flags] FILE|DIR...
  simulate bench [flags]
  simulate demo [flags]
  simulate --version

Commands:
  list   print the scenarios in DIR (default scenarios/) with their descriptions
  run    run scenarios and judge them; exit 0 only if every one met its expect
  explore  perturbed runs of the scenarios, judged by the invariants: crash points at the
         gate's Node writes, stale views, config transitions (simulate explore -h)
  bench  measure the gate against the plane's floor on the embedded plane
         (simulate bench -h for its flags)
  demo   the autoscale demo: Karpenter launches nodes for a Deployment scaled from 0,
         the gate holds each until its warm-up is done (simulate demo -h for its flags)

Run flags:
`

func main() {
	gateundertest.RunFloorChild() // this binary re-executed as the benchmark's floor controller
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "simulate:", err)
	}
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		runFlags(stderr).PrintDefaults()
		return 2, nil
	}
	switch args[0] {
	case "list":
		dir := "scenarios"
		if len(args) > 1 {
			dir = args[1]
		}
		scs, err := scenario.LoadAll([]string{dir})
		if err != nil {
			return 1, err
		}
		for _, sc := range scs {
			fmt.Fprintf(stdout, "%-36s %s\n", sc.Name, firstLine(sc.Description))
		}
		return 0, nil
	case "run":
		return runScenarios(args[1:], stdout, stderr)
	case "explore":
		return runExplore(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, version.String())
		return 0, nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		runFlags(stdout).PrintDefaults()
		return 0, nil
	}
	return 2, fmt.Errorf("unknown command %q (want list, run, explore, bench or demo)", args[0])
}

type runOpts struct {
	backend, kubeconfig, gate, jsonOut, junitOut, htmlOut, gateLog, planeLogs string
	seed                                                                      uint64
	repeat, parallel                                                          int
	verbose                                                                   bool
}

var opts runOpts

func runFlags(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&opts.backend, "backend", "embedded", "control plane: embedded (etcd + apiserver + scheduler + controller-manager), kubeconfig, or kind")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig for --backend kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&opts.gate, "gate", "in-process", "gate under test: in-process (webhook + controller), policy (MutatingAdmissionPolicy + controller), off (negative control), floor (policy + the trivial reference controller), installed (a gate already running in the cluster, as its chart installs it)")
	fs.Uint64Var(&opts.seed, "seed", 1, "seed of every random choice; repetition i uses seed+i")
	fs.IntVar(&opts.repeat, "repeat", 1, "run each scenario this many times, on consecutive seeds")
	fs.IntVar(&opts.parallel, "parallel", 1, "run up to this many scenarios at once on the shared plane (an apiserver restart always runs alone)")
	fs.StringVar(&opts.jsonOut, "json", "", "write the JSON report here")
	fs.StringVar(&opts.junitOut, "junit", "", "write a JUnit XML report here")
	fs.StringVar(&opts.htmlOut, "html", "", "write the HTML report (one self-contained page of pictures) here")
	fs.StringVar(&opts.gateLog, "gate-log", "", "write the gate's logs, and client-go's and klog's, here (default: a temporary file, named at the start)")
	fs.BoolVar(&opts.verbose, "v", false, "print those logs on stderr as well")
	fs.StringVar(&opts.planeLogs, "plane-logs", "", "keep the embedded plane's logs (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) in this directory (default: the plane's temporary directory, removed at exit)")
	return fs
}

func runScenarios(args []string, stdout, stderr io.Writer) (int, error) {
	fs := runFlags(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	mode, err := gateundertest.ParseMode(opts.gate)
	if err != nil {
		return 2, err
	}
	if fs.NArg() == 0 {
		return 2, fmt.Errorf("run: name scenario files or directories")
	}
	if opts.repeat < 1 {
		return 2, fmt.Errorf("--repeat must be at least 1")
	}
	scs, err := scenario.LoadAll(fs.Args())
	if err != nil {
		return 2, err
	}
	logPath, err := setLogs(opts.gateLog, opts.verbose, stderr)
	if err != nil {
		return 2, err
	}
	backend, err := newBackend(opts.backend, opts.kubeconfig, opts.planeLogs)
	if err != nil {
		return 2, err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	con := newConsole(stdout)
	defer con.Close()
	fmt.Fprintf(con, "starting %s control plane (logs: %s)\n", backend.Name(), logPath)
	if opts.planeLogs != "" {
		fmt.Fprintf(con, "the plane's own logs: %s\n", opts.planeLogs)
	}
	rc, err := backend.Start(ctx)
	if err != nil {
		return 1, err
	}
	defer func() { _ = backend.Stop() }()
	if e, ok := backend.(*controlplane.Embedded); ok {
		fmt.Fprintf(con, "control plane up in %.1fs\n", e.StartDuration().Seconds())
	}

	plane, _ := backend.(*controlplane.Embedded)
	runner, err := sim.NewRunner(rc, sim.Options{Gate: mode, Progress: con, Plane: plane})
	if err != nil {
		return 1, err
	}
	runner.Opts.Seed = opts.seed
	fmt.Fprintf(con, "%d scenario(s) × %d, seeds %d..%d, gate %s, %d at a time\n", len(scs), opts.repeat,
		opts.seed, opts.seed+uint64(opts.repeat)-1, mode, opts.parallel)
	results, runErr := runner.RunRepeated(ctx, scs, opts.repeat, opts.parallel)
	rep := &report.Report{Backend: backend.Name(), Gate: string(mode), Seed: opts.seed, Scenarios: results}
	con.Close()
	// What ran is reported and written even when a run could not be carried out (the plane
	// failed, or the soak was interrupted): a thousand runs are not lost to the last one.
	// One run a line, or for a soak one line a scenario over its repetitions.
	if opts.repeat > 1 {
		rep.WriteSummary(stdout)
		rep.WriteFailures(stdout)
	} else {
		rep.WriteText(stdout)
	}
	if err := writeReports(rep); err != nil {
		return 1, errors.Join(runErr, err)
	}
	if runErr != nil {
		return 1, runErr
	}
	if !rep.Passed() {
		return 1, nil
	}
	return 0, nil
}

// newBackend is the control plane --backend names.
func newBackend(name, kubeconfig, planeLogs string) (controlplane.Backend, error) {
	if planeLogs != "" && name != "embedded" {
		return nil, fmt.Errorf("--plane-logs: only the embedded backend's logs are the simulator's to keep (--backend %s)", name)
	}
	switch name {
	case "embedded":
		if planeLogs == "" {
			return &controlplane.Embedded{}, nil
		}
		if err := os.MkdirAll(planeLogs, 0o755); err != nil {
			return nil, fmt.Errorf("--plane-logs: %w", err)
		}
		return &controlplane.Embedded{LogDir: planeLogs}, nil
	case "kubeconfig":
		return &controlplane.Kubeconfig{Path: kubeconfig}, nil
	case "kind":
		return &controlplane.Kind{}, nil
	}
	return nil, fmt.Errorf("--backend %q: want embedded, kubeconfig or kind", name)
}

// writeReports writes the report files the flags ask for.
func writeReports(rep *report.Report) error {
	for path, write := range map[string]func(string) error{opts.jsonOut: rep.WriteJSON, opts.junitOut: rep.WriteJUnit, opts.htmlOut: rep.WriteHTML} {
		if path == "" {
			continue
		}
		if err := write(path); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// setLogs sends every log of this process — the in-process gate's and controller-runtime's
// (through its logger), client-go's and the other Kubernetes libraries' (through klog) — to
// the file at path, or to a new temporary file if path is empty, and with verbose to
// stderr as well. The console is for scenario progress and results; a line such as
// client-go's "Unexpected error when reading response body" when a watch ends belongs in
// the log. It returns the file's name.
func setLogs(path string, verbose bool, stderr io.Writer) (string, error) {
	var f *os.File
	var err error
	if path == "" {
		f, err = os.CreateTemp("", "startupgate-simulate-*.log")
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return "", fmt.Errorf("--gate-log: %w", err)
	}
	var w io.Writer = f
	if verbose {
		w = io.MultiWriter(f, stderr)
	}
	logger := jsonlog.New(w)
	ctrl.SetLogger(logger)
	// klog writes errors to stderr whatever its output is set to (its stderrthreshold);
	// with a logger set, it writes everything there instead.
	klog.SetLogger(logger)
	return f.Name(), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

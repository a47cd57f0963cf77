package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/startupgate/startupgate/sim/bench"
)

// runBench runs the benchmark and writes DIR/bench.json and DIR/bench.md. It exits 0 when
// the benchmark ran, whether or not every target was met: targets are figures to report,
// not assertions (the machines are shared and noisy).
func runBench(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "100,1000,5000", "burst sizes (nodes joining at once), comma-separated")
	ref := fs.Int("reference", 0, "size at which admission policy and the reactive peer run and the targets are judged (default: 1000 if listed, else the largest)")
	pods := fs.Int("pods", 100000, "workload Pods added for the gate's memory figure at the largest size")
	seed := fs.Uint64("seed", 1, "seed of every random choice")
	skip := fs.String("skip", "", "modes not to run, comma-separated: gate-policy, reactive (for a shorter experiment)")
	out := fs.String("out", "out", "directory for bench.json, bench.md and the plane's and gate's logs")
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
	opts := bench.Options{Reference: *ref, Pods: *pods, Seed: *seed, Progress: stdout}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return 2, fmt.Errorf("--sizes: %q is not a node count", f)
		}
		opts.Sizes = append(opts.Sizes, n)
	}
	opts.Skip = map[string]bool{}
	for _, m := range strings.Split(*skip, ",") {
		switch m = strings.TrimSpace(m); m {
		case "":
		case "gate-policy", "reactive":
			opts.Skip[m] = true
		default:
			return 2, fmt.Errorf("--skip: %q is not a mode that can be skipped (gate-policy, reactive)", m)
		}
	}
	if *pods < 1 {
		return 2, fmt.Errorf("--pods must be at least 1")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return 1, err
	}
	opts.LogDir = *out
	if err := setGateLogger(filepath.Join(*out, "bench-gate.log")); err != nil {
		return 2, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, opts)
	if err != nil {
		return 1, err
	}
	if err := rep.WriteJSON(filepath.Join(*out, "bench.json")); err != nil {
		return 1, err
	}
	md := rep.String()
	if err := os.WriteFile(filepath.Join(*out, "bench.md"), []byte(md), 0o644); err != nil {
		return 1, err
	}
	fmt.Fprint(stdout, "\n"+md)
	return 0, nil
}

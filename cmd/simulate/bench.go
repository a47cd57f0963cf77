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
	ref := fs.Int("reference", 0, "size at which admission policy and the reactive peer run and the targets are judged (default: 1000 if listed, else the largest)")
	pods := fs.Int("pods", 100000, "workload Pods added for the gate's memory figure at the largest size")
	seed := fs.Uint64("seed", 1, "seed of every random choice")
	skip := fs.String("skip", "", "modes not to run, comma-separated: gate-policy, reactive (for a shorter experiment)")
	out := fs.String("out", "out", "directory for bench.json, bench.md, bench.html and the plane's and gate's logs")
	from := fs.String("from", "", "run nothing: write bench.md and bench.html from this bench.json")
	verbose := fs.Bool("v", false, "print the logs of client-go, klog and the in-process gate on stderr as well")
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
	if *from != "" {
		rep, err := readBench(*from)
		if err != nil {
			return 1, err
		}
		return writeBench(rep, *out, stdout, false)
	}
	con := newConsole(stdout)
	defer con.Close()
	opts := bench.Options{Reference: *ref, Pods: *pods, Seed: *seed, Progress: con}
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

// writeBench writes DIR/bench.json (unless the report was read from one), bench.md and
// bench.html, and prints the Markdown.
func writeBench(rep *bench.BenchReport, dir string, stdout io.Writer, withJSON bool) (int, error) {
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
func readBench(path string) (*bench.BenchReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rep := &bench.BenchReport{}
	if err := json.Unmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return rep, nil
}

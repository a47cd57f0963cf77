package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/startupgate/startupgate/sim/report"
)

// notMeasured is how bench.md shows a figure the run did not measure; it meets no target.
const notMeasured = "not measured"

// WriteJSON writes out/bench.json.
func (r *Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(path, append(data, '\n'))
}

// WriteMarkdown writes out/bench.md: the bursts (pairs, then the webhook gate), the paced
// rates, the zero-jitter burst, the breakdowns, the cost, the targets and the stuck nodes.
func (r *Report) WriteMarkdown(w io.Writer) {
	sizes := r.sizes()
	fmt.Fprintf(w, "Machine: %s. Plane warm start: %.1f s.", r.Machine, r.PlaneStartS)
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, " Phases skipped: %s.", strings.Join(r.Skipped, ", "))
	}
	if r.Only != "" {
		fmt.Fprintf(w, " Only the %s phase ran.\n", r.Only)
		r.writeBindingBurst(w)
		r.writeStuck(w)
		return
	}
	fmt.Fprint(w, "\n\n")
	head, rule := "| burst (nodes) |", "|---|"
	for _, n := range sizes {
		head += fmt.Sprintf(" %d |", n)
		rule += "---:|"
	}
	fmt.Fprintf(w, "%s\n%s\n", head, rule)
	row := func(name string, cell func(k string) string) {
		line := "| " + name + " |"
		for _, n := range sizes {
			line += " " + cell(strconv.Itoa(n)) + " |"
		}
		fmt.Fprintln(w, line)
	}
	pairs := func(f func(Pair) string) func(string) string {
		return func(k string) string {
			if len(r.Pairs[k]) == 0 {
				return notMeasured
			}
			var out []string
			for _, p := range r.Pairs[k] {
				out = append(out, f(p))
			}
			return strings.Join(out, ", ")
		}
	}
	row("gate (policy) p99 per pair (ms)", pairs(func(p Pair) string { return r.runP99(p.Gate, p.GateP99) }))
	row("floor (policy) p99 per pair (ms)", pairs(func(p Pair) string { return r.runP99(p.Floor, p.FloorP99) }))
	row("gate p99 / floor p99 per pair", pairs(func(p Pair) string { return ratio(p.Ratio) }))
	row("ratio median (min–max), complete pairs", func(k string) string { return r.PairRatio[k].String() })
	row("gate (webhook) p50 / p90 / p99 / max (ms)", func(k string) string { return r.pct(k) })
	row("gate (webhook) first join to last release (s)", func(k string) string {
		if s, ok := r.SimWallS[k]; ok && r.complete(benchGate, k) {
			return fmt.Sprintf("%.1f", s)
		}
		return notMeasured
	})
	row("released / nodes, every run", func(k string) string {
		n, _ := strconv.Atoi(k)
		rel, all := 0, 0
		for _, run := range r.Runs {
			if run.Nodes == n && r.sizeRun(run, n) {
				rel, all = rel+run.Released, all+run.Nodes
			}
		}
		return fmt.Sprintf("%d / %d", rel, all)
	})
	r.writePaced(w)
	for _, k := range sortedKeys(r.Pairs) {
		if strings.HasPrefix(k, "zero-jitter-") {
			p := r.Pairs[k][0]
			fmt.Fprintf(w, "\nZero jitter, %s-node burst (every init Pod Ready 2 s after binding): gate p99 %.0f ms, floor p99 %.0f ms, ratio %s.\n",
				strings.TrimPrefix(k, "zero-jitter-"), p.GateP99, p.FloorP99, ratio(p.Ratio))
		}
	}
	r.writeBreakdowns(w)
	r.writeWorkers(w)
	fmt.Fprintln(w, "\n| cost | gate | floor | gate / floor |\n|---|---:|---:|---:|")
	c := r.CPUPer1000
	fmt.Fprintf(w, "| CPU seconds per 1000 releases (%d-node pairs, process start to settled) | %s | %s | %s |\n",
		r.Reference, seconds(c.Gate), seconds(c.Floor), ratio(c.Ratio))
	fmt.Fprintf(w, "| Node writes per release (conflicts) | %s (%d) | %s (%d) | |\n",
		perRelease(r.WritesPerRelease), r.WriteConflicts, perRelease(r.FloorWritesPerRelease), r.FloorWriteConflicts)
	r.writeRequests(w)
	r.writeBindingBurst(w)
	fmt.Fprintln(w, "\n| target | measured | met |")
	fmt.Fprintln(w, "|---|---|:---:|")
	for _, t := range r.targets() {
		met := t.Verdict()
		if met == "no" {
			met = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Measured, met)
	}
	fmt.Fprintf(w, "\nReactive peer (no tainting at CREATE, backfill only), %d-node burst: %s; the gate (webhook): %d.\n",
		r.Reference, r.reactive(), r.GateEarlyPods)
	r.writeStuck(w)
}

// runP99 is a run's p99, or "not measured" with how far it got when it did not release
// every node.
func (r *Report) runP99(name string, p99 float64) string {
	for _, run := range r.Runs {
		if run.Name == name && run.Released != run.Nodes {
			return fmt.Sprintf("%s (%d of %d released)", notMeasured, run.Released, run.Nodes)
		}
	}
	return fmt.Sprintf("%.0f", p99)
}

func (r *Report) writePaced(w io.Writer) {
	if len(r.Paced) == 0 {
		fmt.Fprintf(w, "\nPaced joins: %s.\n", notMeasured)
		return
	}
	fmt.Fprintln(w, "\n| paced joins (nodes/s × s) | nodes | gate p50 / p99 (ms) | floor p50 / p99 (ms) | complete |\n|---|---:|---:|---:|:---:|")
	for _, p := range r.Paced {
		fmt.Fprintf(w, "| %d × %.0f | %d | %.0f / %.0f | %.0f / %.0f | %s |\n", p.Rate, p.Seconds, p.Nodes,
			p.Gate.P50, p.Gate.P99, p.Floor.P50, p.Floor.P99, map[bool]string{true: "yes", false: "**no**"}[p.Complete])
	}
}

func (r *Report) writeBreakdowns(w io.Writer) {
	for _, label := range sortedKeys(r.BreakdownMS) {
		bd := r.BreakdownMS[label]
		fmt.Fprintf(w, "\nRelease latency by stage, %s (`%s`):\n\n| stage | p50 (ms) | p99 (ms) | count | |\n|---|---:|---:|---:|---|\n", label, bd.Run)
		if len(bd.Stages) == 0 {
			fmt.Fprintf(w, "| every stage | %s | %s | 0 | |\n", notMeasured, notMeasured)
		}
		for _, s := range bd.Stages {
			src := "per release"
			if !s.PerRelease {
				src = "gate histogram, every observation"
			}
			if s.Count == 0 {
				fmt.Fprintf(w, "| %s | %s | %s | 0 | %s |\n", s.Name, notMeasured, notMeasured, src)
				continue
			}
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %d | %s |\n", s.Name, s.P50, s.P99, s.Count, src)
		}
	}
}

func (r *Report) writeWorkers(w io.Writer) {
	if len(r.Workers) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| gate --workers beside the shipped default (same burst, policy) | p99 (ms) | workqueue p99 (ms) | shipped p99 (ms) | shipped workqueue p99 (ms) | shipped p99 / this p99 |\n|---|---:|---:|---:|---:|---:|")
	for _, x := range r.Workers {
		fmt.Fprintf(w, "| %d workers, `%s` beside `%s` | %.0f | %.0f | %.0f | %.0f | %s |\n",
			x.Workers, x.Run, x.Burst, x.P99, x.WorkqueueP99, x.ShippedP99, x.ShippedQueueP99, ratio(x.Ratio))
	}
}

// writeStuck names every run that did not pass with its failures (a run can release every
// node and still fail, on a late simulator error), every restarted process, and every node
// a run never released.
func (r *Report) writeStuck(w io.Writer) {
	for _, run := range r.Runs {
		if run.Restarts > 0 {
			fmt.Fprintf(w, "\n%s: the %s process exited on its own %d time(s) and was started again, as a Deployment would; its CPU includes the exited processes, and its stage breakdown is left out.\n",
				run.Name, run.Mode, run.Restarts)
		}
	}
	for _, run := range r.Runs {
		if !run.Passed && len(run.Failures) > 0 {
			fmt.Fprintf(w, "\n%s did not pass: %s.\n", run.Name, strings.Join(run.Failures, "; "))
		}
	}
	for _, run := range r.Runs {
		if len(run.Stuck) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d of %d nodes never released:\n\n", run.Name, run.Nodes-run.Released, run.Nodes)
		for _, s := range run.Stuck {
			fmt.Fprintf(w, "- %s\n", s)
		}
	}
}

type target struct {
	Name, Measured string
	Met            bool
	// Info: reported, not judged (but a figure not measured still fails).
	Info bool
}

// Verdict is the target's "met" column, in bench.md and on the page alike: "yes", "no", or
// "–" for a figure reported, not judged. A figure not measured is never met.
func (t target) Verdict() string {
	switch {
	case strings.HasPrefix(t.Measured, notMeasured), !t.Info && !t.Met:
		return "no"
	case t.Info:
		return "–"
	}
	return "yes"
}

// sizeRun: run is one of the burst runs of size n (not paced, not zero jitter).
func (r *Report) sizeRun(run RunResult, n int) bool {
	base := benchName(run.Mode, n)
	return run.Name == base || strings.HasPrefix(run.Name, base+"-p")
}

// complete reports whether the webhook gate's (mode gate) or every run of mode at size k
// released every node: a figure from a run that did not is no figure.
func (r *Report) complete(mode, k string) bool {
	n, _ := strconv.Atoi(k)
	found := false
	for _, run := range r.Runs {
		if run.Mode == mode && r.sizeRun(run, n) {
			if run.Released != run.Nodes || run.Nodes == 0 {
				return false
			}
			found = true
		}
	}
	return found
}

func (r *Report) pct(k string) string {
	p, ok := r.ReleaseLatencyMS[k]
	if !ok || !r.complete(benchGate, k) {
		return notMeasured
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", p.P50, p.P90, p.P99, p.Max)
}

func (r *Report) reactive() string {
	for _, run := range r.Runs {
		if run.Mode == benchReactive {
			return fmt.Sprintf("%d workload Pods landed early", r.ReactiveEarlyPods)
		}
	}
	return notMeasured
}

func (r *Report) targets() []target {
	ref := strconv.Itoa(r.Reference)
	whole := r.complete(benchGate, ref)
	gate := r.ReleaseLatencyMS[ref]
	ms := func(ok bool, v float64) string {
		if !ok {
			return notMeasured
		}
		return fmt.Sprintf("%.0f ms", v)
	}
	pr := r.PairRatio[ref]
	ts := []target{
		{Name: fmt.Sprintf("release p99 ≤ 100 ms at %s nodes (webhook gate)", ref), Measured: ms(whole, gate.P99), Met: whole && gate.P99 <= 100},
		{Name: fmt.Sprintf("release p99 ≤ 2× floor p99 at %s nodes (median of the pairs, same admission)", ref), Measured: pr.String(), Met: pr.N > 0 && pr.Median <= 2},
		r.pacedTarget(),
		{Name: fmt.Sprintf("webhook admission p99 ≤ 5 ms at %s nodes", ref), Measured: admission(r.AdmissionMS.Webhook), Met: r.AdmissionMS.Webhook.Count > 0 && r.AdmissionMS.Webhook.P99 <= 5},
		{Name: "webhook handler inside the gate (the gate's own histogram)", Measured: admission(r.AdmissionMS.GateHandler), Info: true},
		{Name: "policy admission p99", Measured: admission(r.AdmissionMS.Policy), Info: true},
		{Name: "exactly 1 Node write per release (gate, every gate run)", Measured: r.writesFigure(), Met: r.WritesPerRelease == 1},
		r.heapTarget(),
		{Name: "gate CPU per 1000 releases, beside the floor's", Measured: r.cpuFigure(), Info: true},
	}
	for _, w := range []struct {
		size  string
		limit float64
	}{{"1000", 60}, {"5000", 150}} {
		if _, ok := r.Pairs[w.size]; !ok {
			continue
		}
		s, ok := r.SimWallS[w.size]
		ok = ok && r.complete(benchGate, w.size)
		wall := notMeasured
		if ok {
			wall = fmt.Sprintf("%.1f s", s)
		}
		ts = append(ts, target{Name: fmt.Sprintf("%s-node burst, first join to last release ≤ %.0f s (webhook gate)", w.size, w.limit),
			Measured: wall, Met: ok && s <= w.limit})
		both := r.complete(benchGate, w.size) && r.complete(benchPolicy, w.size)
		ts = append(ts, target{Name: fmt.Sprintf("%s-node burst: every node released, gate on the webhook and on the policy", w.size),
			Measured: r.releasedFigure(w.size), Met: both})
	}
	return append(ts, target{Name: "warm plane start ≤ 5 s", Measured: fmt.Sprintf("%.1f s", r.PlaneStartS), Met: r.PlaneStartS > 0 && r.PlaneStartS <= 5})
}

// pacedTarget: at the highest rate at which the floor's p99 stays under 100 ms, the gate's
// p99 is at most 100 ms.
func (r *Report) pacedTarget() target {
	t := target{Name: "paced joins: gate p99 ≤ 100 ms at the highest rate where the floor's p99 < 100 ms", Measured: notMeasured}
	var best *Paced
	for i := range r.Paced {
		p := &r.Paced[i]
		if p.Complete && p.Floor.P99 < 100 && (best == nil || p.Rate > best.Rate) {
			best = p
		}
	}
	if best == nil {
		if len(r.Paced) > 0 {
			t.Measured = notMeasured + ": no rate kept the floor's p99 under 100 ms"
		}
		return t
	}
	t.Measured = fmt.Sprintf("%.0f ms at %d nodes/s (floor %.0f ms)", best.Gate.P99, best.Rate, best.Floor.P99)
	t.Met = best.Gate.P99 <= 100
	return t
}

func (r *Report) heapTarget() target {
	t := target{Name: fmt.Sprintf("gate heap with %d Pods ≤ 1.2× heap with 0 (%d nodes)", r.FillerPods, r.MemoryNodes), Measured: notMeasured}
	if r.OwnLabels {
		t.Name = fmt.Sprintf("gate heap with %d Pods ≤ 1.2× heap with 0 (%d nodes, %d components with their own labels)", r.FillerPods, r.MemoryNodes, len(ownComponents))
	}
	h := r.GateHeapBytes
	if h.Pods0 == 0 || h.Pods100k == 0 {
		return t
	}
	t.Measured = fmt.Sprintf("%.2f× (%s → %s; RSS %s → %s)", r.GateHeapRatio, mib(h.Pods0), mib(h.Pods100k), mib(r.GateRSSBytes.Pods0), mib(r.GateRSSBytes.Pods100k))
	t.Met = r.GateHeapRatio <= 1.2
	return t
}

func (r *Report) writesFigure() string {
	if r.WritesPerRelease == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f (%d conflicts); floor %.2f (%d conflicts)", r.WritesPerRelease, r.WriteConflicts, r.FloorWritesPerRelease, r.FloorWriteConflicts)
}

func (r *Report) cpuFigure() string {
	c := r.CPUPer1000
	if c.Gate == 0 || c.Floor == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f s vs %.2f s (%.2f×)", c.Gate, c.Floor, c.Ratio)
}

func (r *Report) releasedFigure(k string) string {
	n, _ := strconv.Atoi(k)
	var parts []string
	for _, run := range r.Runs {
		if (run.Mode == benchGate || run.Mode == benchPolicy) && r.sizeRun(run, n) {
			parts = append(parts, fmt.Sprintf("%s %d/%d", run.Name, run.Released, run.Nodes))
		}
	}
	if len(parts) == 0 {
		return notMeasured
	}
	return strings.Join(parts, ", ")
}

func (s RatioSummary) String() string {
	if s.N == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f, %s)", s.Median, s.Min, s.Max, pairsCount(s.N))
}

// pairsCount is "1 pair" or "n pairs".
func pairsCount(n int) string {
	if n == 1 {
		return "1 pair"
	}
	return fmt.Sprintf("%d pairs", n)
}

func ratio(v float64) string {
	if v == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f", v)
}

func seconds(v float64) string {
	if v == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f s", v)
}

func perRelease(v float64) string {
	if v == 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f", v)
}

func admission(q Quantiles) string {
	if q.Count == 0 {
		return notMeasured
	}
	bucket := fmt.Sprintf("≤ %g ms bucket", q.BucketMS)
	if q.BucketMS < 0 {
		bucket = "above the largest bucket"
	}
	return fmt.Sprintf("p50 %.2f / p99 %.2f ms (%s, %d calls)", q.P50, q.P99, bucket, q.Count)
}

func mib(b uint64) string { return strconv.FormatUint(b>>20, 10) + " MiB" }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String is the Markdown, for printing.
func (r *Report) String() string {
	var sb strings.Builder
	r.WriteMarkdown(&sb)
	return sb.String()
}

// writeRequests writes the API requests per node by component, a column per run of the
// largest burst that has them, and the simulator's own share.
func (r *Report) writeRequests(w io.Writer) {
	var runs []RunResult
	for _, run := range r.Runs {
		if _, ok := r.RequestsPerNode[run.Name]; ok {
			runs = append(runs, run)
		}
	}
	if len(runs) == 0 {
		fmt.Fprintf(w, "\nAPI requests per node by component: %s.\n", notMeasured)
		return
	}
	fmt.Fprintf(w, "\nAPI requests per node by component (user agent, audit log; run start to settled), %d-node burst:\n\n| component |", runs[0].Nodes)
	rule := "|---|"
	for _, run := range runs {
		fmt.Fprintf(w, " `%s` |", run.Name)
		rule += "---:|"
	}
	fmt.Fprintf(w, "\n%s\n", rule)
	for _, c := range componentsIn(runs) {
		fmt.Fprintf(w, "| %s |", c)
		for _, run := range runs {
			fmt.Fprintf(w, " %.2f |", r.RequestsPerNode[run.Name][c])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| the simulator's own (fake kubelet, recorder, steps) |")
	for _, run := range runs {
		pn := r.RequestsPerNode[run.Name]
		fmt.Fprintf(w, " %.2f |", pn[compKubelet]+pn[compRecorder]+pn[compSim])
	}
	fmt.Fprintln(w)
	writeProcessCPU(w, runs)
}

// processOrder lists the processes a run's CPU is read from, for the report.
var processOrder = []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", simulatorProcess, benchGate, benchPolicy, benchFloor}

// writeProcessCPU writes where the machine's CPU went in each of the runs: every process,
// start to settled, and their sum beside the run's wall time.
func writeProcessCPU(w io.Writer, runs []RunResult) {
	fmt.Fprintf(w, "\nCPU seconds by process, run start to settled (the machine has the cores named above):\n\n| process |")
	rule := "|---|"
	for _, run := range runs {
		fmt.Fprintf(w, " `%s` |", run.Name)
		rule += "---:|"
	}
	fmt.Fprintf(w, "\n%s\n", rule)
	for _, p := range processOrder {
		read := false
		for _, run := range runs {
			_, ok := run.ProcessCPUS[p]
			read = read || ok
		}
		if !read {
			continue
		}
		fmt.Fprintf(w, "| %s |", p)
		for _, run := range runs {
			if v, ok := run.ProcessCPUS[p]; ok {
				fmt.Fprintf(w, " %.1f |", v)
			} else {
				fmt.Fprint(w, " |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| all, over the run's wall time (s) |")
	for _, run := range runs {
		if len(run.ProcessCPUS) == 0 {
			fmt.Fprintf(w, " %s |", notMeasured)
			continue
		}
		sum := 0.0
		for _, v := range run.ProcessCPUS {
			sum += v
		}
		fmt.Fprintf(w, " %.1f / %.1f |", sum, run.WindowS)
	}
	fmt.Fprintln(w)
}

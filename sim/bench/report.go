package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/report"
)

// WriteJSON writes out/bench.json.
func (r *BenchReport) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(path, append(data, '\n'))
}

// WriteMarkdown writes the short table of out/bench.md: the figures per burst size, then
// each target with its measured value and whether it was met.
func (r *BenchReport) WriteMarkdown(w io.Writer) {
	sizes := make([]int, 0, len(r.ReleaseLatencyMS))
	for k := range r.ReleaseLatencyMS {
		n, _ := strconv.Atoi(k)
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	head, rule := "| burst (nodes) |", "|---|"
	for _, n := range sizes {
		head += fmt.Sprintf(" %d |", n)
		rule += "---:|"
	}
	fmt.Fprintf(w, "Machine: %s. Plane warm start: %.1f s.\n\n%s\n%s\n", r.Machine, r.PlaneStartS, head, rule)
	row := func(name string, cell func(k string) string) {
		line := "| " + name + " |"
		for _, n := range sizes {
			line += " " + cell(strconv.Itoa(n)) + " |"
		}
		fmt.Fprintln(w, line)
	}
	pct := func(p check.Percentiles) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", p.P50, p.P90, p.P99, p.Max)
	}
	row("gate release latency p50 / p90 / p99 / max (ms)", func(k string) string { return pct(r.ReleaseLatencyMS[k]) })
	row("floor release latency p50 / p90 / p99 / max (ms)", func(k string) string { return pct(r.FloorLatencyMS[k]) })
	row("gate p99 / floor p99", func(k string) string { return fmt.Sprintf("%.2f", r.FloorRatioP99[k]) })
	row("first join to last release (s)", func(k string) string { return fmt.Sprintf("%.1f", r.SimWallS[k]) })
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---|:---:|")
	for _, t := range r.targets() {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Measured, met)
	}
	fmt.Fprintf(w, "\nReactive peer (no tainting at CREATE, backfill only), %d-node burst: %d workload Pods landed early; the gate: %d.\n",
		r.reference(), r.ReactiveEarlyPods, r.GateEarlyPods)
}

type target struct {
	Name, Measured string
	Met            bool
}

// reference is the burst size the admission and reactive figures were taken at.
func (r *BenchReport) reference() int {
	return r.Reference
}

// complete reports whether the run of mode at size released every node: a figure from a
// run that did not is no figure, and meets no target.
func (r *BenchReport) complete(mode string, size int) bool {
	for _, run := range r.Runs {
		if run.Mode == mode && run.Nodes == size {
			return run.Released == run.Nodes && run.Nodes > 0
		}
	}
	return false
}

func (r *BenchReport) targets() []target {
	refN := r.reference()
	ref := strconv.Itoa(refN)
	gate, fl := r.ReleaseLatencyMS[ref], r.FloorLatencyMS[ref]
	whole := r.complete(benchGate, refN) && r.complete(benchFloor, refN)
	wh := r.AdmissionMS.Webhook
	ts := []target{
		{fmt.Sprintf("release p99 ≤ 100 ms at %s nodes", ref), fmt.Sprintf("%.0f ms", gate.P99), whole && gate.P99 <= 100},
		{fmt.Sprintf("release p99 ≤ 2× floor p99 at %s nodes", ref), fmt.Sprintf("%.2f× (%.0f / %.0f ms)", r.FloorRatioP99[ref], gate.P99, fl.P99), whole && r.FloorRatioP99[ref] <= 2},
		{fmt.Sprintf("webhook admission p99 ≤ 5 ms at %s nodes", ref), admission(wh), wh.Count > 0 && wh.P99 <= 5},
		{"webhook handler inside the gate (informational, the gate's own histogram)", admission(r.AdmissionMS.GateHandler), true},
		{"policy admission p99 (informational)", admission(r.AdmissionMS.Policy), true},
		{"exactly 1 Node write per release", fmt.Sprintf("%.2f (%d conflicts); floor %.2f", r.WritesPerRelease, r.WriteConflicts, r.FloorWritesPerRelease), r.WritesPerRelease == 1},
		{fmt.Sprintf("gate heap with %d Pods ≤ 1.2× heap with 0 (%d nodes)", r.FillerPods, r.MemoryNodes),
			fmt.Sprintf("%.2f× (%s → %s; RSS %s → %s)", r.GateHeapRatio, mib(r.GateHeapBytes.Pods0), mib(r.GateHeapBytes.Pods100k), mib(r.GateRSSBytes.Pods0), mib(r.GateRSSBytes.Pods100k)),
			r.GateHeapRatio > 0 && r.GateHeapRatio <= 1.2},
		{"gate CPU per 1000 releases (informational)", fmt.Sprintf("%.2f s", r.GateCPUSecondsPer1000), true},
	}
	for _, w := range []struct {
		size  string
		limit float64
	}{{"1000", 60}, {"5000", 300}} {
		if s, ok := r.SimWallS[w.size]; ok {
			n, _ := strconv.Atoi(w.size)
			ts = append(ts, target{fmt.Sprintf("%s-node burst, first join to last release ≤ %.0f s", w.size, w.limit), fmt.Sprintf("%.1f s", s), r.complete(benchGate, n) && s <= w.limit})
		}
	}
	return append(ts, target{"warm plane start ≤ 5 s", fmt.Sprintf("%.1f s", r.PlaneStartS), r.PlaneStartS <= 5})
}

func admission(q Quantiles) string {
	bucket := fmt.Sprintf("≤ %g ms bucket", q.BucketMS)
	if q.BucketMS < 0 {
		bucket = "above the largest bucket"
	}
	return fmt.Sprintf("p50 %.2f / p99 %.2f ms (%s, %d calls)", q.P50, q.P99, bucket, q.Count)
}

func mib(b uint64) string { return strconv.FormatUint(b>>20, 10) + " MiB" }

// String is the Markdown, for printing.
func (r *BenchReport) String() string {
	var sb strings.Builder
	r.WriteMarkdown(&sb)
	return sb.String()
}

package bench

import (
	"strings"
	"testing"
)

// TestMarkdownNotMeasured: a figure the run did not measure reads "not measured" and fails
// its target — never a zero that passes for a measurement.
func TestMarkdownNotMeasured(t *testing.T) {
	r := synthetic() // its 5000-node gate run released 4924: no heap, no CPU was read
	md := r.String()
	for _, want := range []string{
		"| gate heap with 0 Pods ≤ 1.2× heap with 0 (0 nodes) | not measured | **no** |",
		"| gate CPU per 1000 releases, beside the floor's | not measured | **no** |",
		"| paced joins: gate p99 ≤ 100 ms at the highest rate where the floor's p99 < 100 ms | not measured | **no** |",
		"| 5000-node burst, first join to last release ≤ 150 s (webhook gate) | not measured | **no** |",
		"Paced joins: not measured.",
		"API requests per node by component: not measured.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bench.md has no %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "0.00×") || strings.Contains(md, "0.00 s") {
		t.Errorf("bench.md shows a zero as a figure:\n%s", md)
	}
}

func TestSummarize(t *testing.T) {
	got := summarize([]Pair{{Ratio: 1.5}, {Ratio: 0}, {Ratio: 0.5}, {Ratio: 1.1}})
	if want := (RatioSummary{Median: 1.1, Min: 0.5, Max: 1.5, N: 3}); got != want {
		t.Errorf("summarize = %+v, want %+v (an incomplete pair has no ratio and does not count)", got, want)
	}
	if got := summarize([]Pair{{Ratio: 1}, {Ratio: 2}}); got.Median != 1.5 {
		t.Errorf("median of two = %v, want 1.5", got.Median)
	}
}

// TestMarkdownRunFailures: a run that released every node can still have failed (a late
// simulator error, a negative control that caught nothing); bench.md says so, with why.
func TestMarkdownRunFailures(t *testing.T) {
	r := synthetic()
	r.Runs[0].Passed, r.Runs[0].Failures = false, []string{"simulator error: cleanup: the request timed out"}
	want := r.Runs[0].Name + " did not pass: simulator error: cleanup: the request timed out."
	if md := r.String(); !strings.Contains(md, want) {
		t.Errorf("bench.md has no %q:\n%s", want, md)
	}
}

// TestVerdict: the "met" column of bench.md and the page. A figure reported, not judged,
// reads "–"; a figure not measured is never met, judged or not.
func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		t    target
		want string
	}{
		{target{Measured: "12 ms", Met: true}, "yes"},
		{target{Measured: "12 ms"}, "no"},
		{target{Measured: "12 ms", Info: true}, "–"},
		{target{Measured: notMeasured, Info: true}, "no"},
		{target{Measured: notMeasured + ": no rate", Met: true}, "no"},
	} {
		if got := tc.t.Verdict(); got != tc.want {
			t.Errorf("%+v: Verdict() = %q, want %q", tc.t, got, tc.want)
		}
	}
}

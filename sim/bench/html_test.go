package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/check"
)

// synthetic is a benchmark report with the README's figures (one make bench run), and a
// gate run at 5000 nodes that did not release every node.
func synthetic() *Report {
	r := &Report{Machine: Machine{CPUs: 2, Model: "AMD EPYC", OSArch: "linux/amd64", Go: "go1.26.8", Commit: "2497970"}, Reference: 1000, PlaneStartS: 3.6,
		ReleaseLatencyMS: map[string]check.Percentiles{}, Pairs: map[string][]Pair{},
		PairRatio: map[string]RatioSummary{"100": {0.98, 0.98, 0.98, 1}, "1000": {0.66, 0.66, 0.66, 1}, "5000": {0.62, 0.62, 0.62, 1}}, SimWallS: map[string]float64{}}
	for _, f := range []struct {
		n               int
		gate, floor     check.Percentiles
		gateS, floorS   float64
		gateRel, policy int
	}{
		{100, check.Percentiles{P50: 15, P90: 55, P99: 298, Max: 298}, check.Percentiles{P50: 17, P90: 169, P99: 305, Max: 315}, 6.0, 6.2, 100, 0},
		{1000, check.Percentiles{P50: 102, P90: 354, P99: 3047, Max: 4186}, check.Percentiles{P50: 84, P90: 254, P99: 4621, Max: 4758}, 48.7, 50.1, 1000, 1000},
		{5000, check.Percentiles{P50: 159, P90: 1128, P99: 6880, Max: 11761}, check.Percentiles{P50: 132, P90: 3801, P99: 11095, Max: 17249}, 454.5, 292, 4924, 0},
	} {
		k := strconv.Itoa(f.n)
		r.ReleaseLatencyMS[k], r.SimWallS[k] = f.gate, f.gateS
		r.Pairs[k] = []Pair{{Gate: benchName(benchPolicy, f.n), Floor: benchName(benchFloor, f.n), GateP99: f.gate.P99, FloorP99: f.floor.P99}}
		r.Runs = append(r.Runs,
			RunResult{Name: benchName(benchFloor, f.n), Mode: benchFloor, Nodes: f.n, Released: f.n, Passed: true, WallS: f.floorS, LatencyMS: f.floor, Writes: f.n},
			RunResult{Name: benchName(benchGate, f.n), Mode: benchGate, Nodes: f.n, Released: f.gateRel, Passed: f.gateRel == f.n, WallS: f.gateS, LatencyMS: f.gate, Writes: f.gateRel})
		if f.policy > 0 {
			r.Runs = append(r.Runs, RunResult{Name: benchName(benchPolicy, f.n), Mode: benchPolicy, Nodes: f.n, Released: f.n, Passed: true, WallS: 47,
				LatencyMS: check.Percentiles{P50: 95, P90: 330, P99: 2900, Max: 3900}})
		}
	}
	r.WritesPerRelease, r.FloorWritesPerRelease = 1, 1
	return r
}

// TestBenchHTML renders the benchmark page of a synthetic report: one latency chart per
// size with the gate and the floor, the wall-time bars, every target, a note for each
// picture it has no data for, and SVG that is well-formed XML.
func TestBenchHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := synthetic().renderHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"<h3>100 nodes · gate p99 / floor p99 = 0.98 (median of 1 pair)</h3>", "<h3>1000 nodes · gate p99 / floor p99 = 0.66 (median of 1 pair)</h3>",
		"5000 nodes · gate p99 / floor p99 = 0.62 (median of 1 pair) · gate released only 4924 of 5000",
		`class="cdf gate"`, `class="cdf floor"`, `class="cdf policy"`, // the policy ran at the reference size only
		"454.5 s (4924 of 5000 released)", "release p99 ≤ 2× floor p99 at 1000 nodes",
		"the gate&#39;s release latency by stage", "repeated gate/floor pairs",
		// a figure reported, not judged, reads "–" as in bench.md, not a red "no"
		"<td>policy admission p99</td><td>not measured</td><td class=\"fail\">no</td>",
		"1000-node burst: not measured; the gate: 0.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("bench.html has no %q", want)
		}
	}
	if n := strings.Count(page, `class="cdf policy"`); n != 1 {
		t.Errorf("%d policy curves; want 1, at the reference size", n)
	}
	svgs := 0
	for rest := page; strings.Contains(rest, "<svg"); svgs++ {
		i := strings.Index(rest, "<svg")
		j := strings.Index(rest[i:], "</svg>") + len("</svg>")
		d := xml.NewDecoder(strings.NewReader(rest[i : i+j]))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("svg %d is not well-formed XML: %v", svgs, err)
			}
		}
		rest = rest[i+j:]
	}
	if svgs != 4 {
		t.Errorf("%d svg elements; want 4: a latency chart per size and the wall-time bars", svgs)
	}
}

// TestBenchNames holds benchName to the names benchScenario gives its runs.
func TestBenchNames(t *testing.T) {
	for _, mode := range []string{benchGate, benchFloor, benchPolicy, benchReactive} {
		sc, err := benchScenario(load{mode: mode, nodes: 100, jitter: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != benchName(mode, 100) {
			t.Errorf("benchScenario(%s, 100) is named %q, benchName says %q", mode, sc.Name, benchName(mode, 100))
		}
	}
}

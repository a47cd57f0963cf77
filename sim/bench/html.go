package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
	"strconv"

	"github.com/startupgate/startupgate/sim/report"
)

// out/bench.html: the benchmark as pictures, one self-contained page like the scenario
// report. Each picture is a panel drawn from what Report holds; a picture whose data
// the benchmark does not record is not drawn, and the page says so (notYet).

// benchPanel is one picture of the page, or several side by side.
type benchPanel struct {
	Title  string
	Charts []benchChart
	Note   string
}

type benchChart struct {
	Caption string
	SVG     template.HTML
}

// panels draw the page's pictures, in order. A panel with nothing to draw returns ok
// false. The pictures of paced rates, the breakdown by stage and the pairs slot in here
// (and leave notYet); their figures are in bench.md and bench.json already.
var panels = []func(r *Report) (benchPanel, bool){latencyPanel, wallPanel}

// notYet are the pictures the page does not draw yet, though the benchmark records their data.
var notYet = []string{
	"release latency per paced join rate (bench.json: paced; bench.md: the paced table);",
	"the gate's release latency by stage, as a stacked bar (bench.json: breakdown_ms; bench.md: one table per run);",
	"repeated gate/floor pairs as dots with their median (bench.json: pairs, pair_ratio_p99; bench.md: the burst table);",
	"release-latency CDFs from every release (bench.json: each run's release_ms); the curves above join percentiles.",
}

// WriteHTML writes out/bench.html.
func (r *Report) WriteHTML(path string) error {
	var buf bytes.Buffer
	if err := r.renderHTML(&buf); err != nil {
		return err
	}
	return report.WriteFile(path, buf.Bytes())
}

func (r *Report) renderHTML(buf *bytes.Buffer) error {
	var ps []benchPanel
	for _, p := range panels {
		if panel, ok := p(r); ok {
			ps = append(ps, panel)
		}
	}
	data := map[string]any{
		"R": r, "Style": template.CSS(report.Style), "Panels": ps, "Targets": r.targets(), "Reactive": r.reactive(), "NotYet": notYet,
		"Runs": r.runRows(),
	}
	if bb := r.BindingBurst; bb != nil {
		bb.summarize()
		data["BurstHead"], data["BurstRows"] = bb.burstModeRows()
		data["Burst"] = bb
	}
	return benchTemplate.Execute(buf, data)
}

// runsOf are the runs at one size, by mode: the runs named after it (a run that did not
// finish may have recorded fewer nodes than its size).
func (r *Report) runsOf(size int) map[string]RunResult {
	out := map[string]RunResult{}
	for _, run := range r.Runs {
		if run.Name == benchName(run.Mode, size) {
			out[run.Mode] = run
		}
	}
	return out
}

// benchName is the name of the run of mode at size, as benchScenario names it.
func benchName(mode string, size int) string { return fmt.Sprintf("bench-%s-%d", mode, size) }

// sizes are the burst sizes of the report's runs, smallest first.
func (r *Report) sizes() []int {
	seen := map[int]bool{}
	for k := range r.ReleaseLatencyMS {
		n, _ := strconv.Atoi(k)
		seen[n] = true
	}
	for k := range r.Pairs {
		if n, err := strconv.Atoi(k); err == nil {
			seen[n] = true
		}
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// latencyPanel: per burst size, the release-latency distributions of the gate beside the
// floor's (and the policy-admitted gate's, where it ran). The benchmark keeps each run's
// p50, p90, p99 and max, so each curve is those four points.
func latencyPanel(r *Report) (benchPanel, bool) {
	p := benchPanel{Title: "release latency: the gate beside the floor",
		Note: "Each curve joins a run's p50, p90, p99 and max (drawn at the top): the fraction of nodes released " +
			"within that latency. Between those points the line is an interpolation, not a measurement."}
	for _, n := range r.sizes() {
		runs := r.runsOf(n)
		var series []report.CDFSeries
		for _, m := range []struct{ mode, name, class string }{
			{benchGate, "gate", "gate"}, {benchFloor, "floor", "floor"}, {benchPolicy, "gate, policy admission", "policy"},
		} {
			run, ok := runs[m.mode]
			if !ok || run.LatencyMS.Max == 0 {
				continue
			}
			l := run.LatencyMS
			series = append(series, report.CDFSeries{Name: m.name, Class: m.class, Points: []report.CDFPoint{
				{MS: l.P50, Q: 0.5, Label: "p50"}, {MS: l.P90, Q: 0.9, Label: "p90"}, {MS: l.P99, Q: 0.99, Label: "p99"}, {MS: l.Max, Q: 1, Label: "max"},
			}})
		}
		if len(series) == 0 {
			continue
		}
		caption := fmt.Sprintf("%d nodes", n)
		if pr := r.PairRatio[strconv.Itoa(n)]; pr.N > 0 {
			caption += fmt.Sprintf(" · gate p99 / floor p99 = %.2f (median of %s)", pr.Median, pairsCount(pr.N))
		}
		for _, mode := range []string{benchGate, benchFloor} {
			if run, ok := runs[mode]; ok && run.Released < run.Nodes {
				caption += fmt.Sprintf(" · %s released only %d of %d", mode, run.Released, run.Nodes)
			}
		}
		p.Charts = append(p.Charts, benchChart{Caption: caption, SVG: report.CDFChart(series, 400, 270)})
	}
	return p, len(p.Charts) > 0
}

// wallPanel: per burst size, the time from the first join to the last release, gate and
// floor.
func wallPanel(r *Report) (benchPanel, bool) {
	var groups []report.BarGroup
	for _, n := range r.sizes() {
		runs := r.runsOf(n)
		g := report.BarGroup{Label: fmt.Sprintf("%d nodes", n)}
		for _, m := range []struct{ mode, class string }{{benchGate, "gate"}, {benchFloor, "floor"}} {
			if run, ok := runs[m.mode]; ok {
				text := fmt.Sprintf("%.1f s", run.WallS)
				if run.Released < run.Nodes {
					text += fmt.Sprintf(" (%d of %d released)", run.Released, run.Nodes)
				}
				g.Bars = append(g.Bars, report.Bar{Label: m.mode, Class: m.class, Value: run.WallS, Text: text})
			}
		}
		if len(g.Bars) > 0 {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return benchPanel{}, false
	}
	return benchPanel{Title: "first join to last release", Charts: []benchChart{{SVG: report.BarChart(groups, 640)}}}, true
}

// runRow is one run in the page's table.
type runRow struct {
	RunResult
	Latency string
}

func (r *Report) runRows() []runRow {
	out := make([]runRow, 0, len(r.Runs))
	for _, run := range r.Runs {
		l := run.LatencyMS
		lat := "–"
		if l.Max > 0 {
			lat = fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", l.P50, l.P90, l.P99, l.Max)
		}
		out = append(out, runRow{RunResult: run, Latency: lat})
	}
	return out
}

var benchTemplate = template.Must(template.New("bench").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>startupgate benchmark</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>{{.Style}}</style></head><body>
<h1>startupgate benchmark</h1>
<p class="muted">{{.R.Machine}} · plane warm start {{printf "%.1f" .R.PlaneStartS}} s · targets judged at {{.R.Reference}} nodes</p>
<div class="legend"><span><i class="sw gate"></i>gate (webhook)</span><span><i class="sw floor"></i>floor: the trivial reference controller</span><span><i class="sw policy"></i>gate with policy admission</span></div>
{{range .Panels}}<h2>{{.Title}}</h2>
<div class="charts">{{range .Charts}}<div>{{if .Caption}}<h3>{{.Caption}}</h3>{{end}}{{.SVG}}</div>{{end}}</div>
{{if .Note}}<p class="muted">{{.Note}}</p>{{end}}
{{end}}
{{if .BurstHead}}<h2>binding burst</h2>
<p class="muted">{{.Burst.Nodes}} released nodes, then {{.Burst.Pods}} Pods at once and {{.Burst.Extra}} more nodes joining; {{.Burst.Rounds}} rounds, each mode once per round in rotated order; medians of the complete rounds (bench.md says how each figure is taken).</p>
<table><tr>{{range .BurstHead}}<th>{{.}}</th>{{end}}</tr>
{{range .BurstRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if not .R.Only}}<h2>targets</h2>
<table class="left"><tr><th>target</th><th>measured</th><th>met</th></tr>
{{range .Targets}}<tr><td>{{.Name}}</td><td>{{.Measured}}</td>{{$v := .Verdict}}<td class="{{if eq $v "yes"}}pass{{else if eq $v "no"}}fail{{end}}">{{$v}}</td></tr>
{{end}}</table>
<p>Reactive peer (no tainting at CREATE, backfill only), {{.R.Reference}}-node burst: {{.Reactive}}; the gate: {{.R.GateEarlyPods}}.</p>{{end}}
<h2>runs</h2>
<table><tr><th>run</th><th>mode</th><th>nodes</th><th>released</th><th>early pods</th><th>latency p50 / p90 / p99 / max (ms)</th><th>first join to last release</th><th>node writes</th><th>conflicts</th><th>passed</th></tr>
{{range .Runs}}<tr><td>{{.Name}}</td><td>{{.Mode}}</td><td>{{.Nodes}}</td><td>{{.Released}}</td><td>{{.EarlyPods}}</td><td>{{.Latency}}</td><td>{{printf "%.1f" .WallS}} s</td><td>{{.Writes}}</td><td>{{.Conflicts}}</td><td class="{{if .Passed}}pass{{else}}fail{{end}}">{{.Passed}}</td></tr>
{{end}}</table>
<h2>not drawn</h2>
<p class="muted">The page does not draw these yet; their figures are in bench.md and bench.json:</p>
<ul class="muted">{{range .NotYet}}<li>{{.}}</li>{{end}}</ul>
</body></html>
`))

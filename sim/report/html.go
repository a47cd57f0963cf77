package report

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The HTML report: one self-contained page. Per scenario, at the top, the run as curves
// over time (nodes joined, tainted, init ready, released; workload Pods bound, early ones
// in red) under the scenario's fault windows, beside the release-latency CDF. Then the
// nodes that went wrong, each with its reason, and the per-node rows: every node, problem
// nodes first; past foldRows nodes the rows are folded away and ordered by release latency,
// worst first.

// foldRows is the node count above which the per-node rows are folded behind <details>.
const foldRows = 200

// maxProblems bounds the table of problem nodes; the rows still show every one of them.
const maxProblems = 100

type htmlScenario struct {
	*Result
	Anchor string
	Early  int
	// EarlyExpected: the run passed with early Pods, so its scenario allowed them (a run
	// passes only if its scenario allowed every violation found): they are shown as
	// expected, not as a failure.
	EarlyExpected bool
	P50, P99      string
	Overview      template.HTML
	CDF           template.HTML
	Problems      []problem
	MoreProblems  int
	Rows          template.HTML
	Folded        bool
	Windows       []string
}

// problem is a node that went wrong, and how.
type problem struct{ Node, Reason string }

// WriteHTML writes the report page.
func (r *Report) WriteHTML(path string) error {
	var buf bytes.Buffer
	if err := r.renderHTML(&buf); err != nil {
		return err
	}
	return WriteFile(path, buf.Bytes())
}

func (r *Report) renderHTML(buf *bytes.Buffer) error {
	scs := make([]htmlScenario, 0, len(r.Scenarios))
	for i, res := range r.Scenarios {
		scs = append(scs, section(res, i))
	}
	return htmlTemplate.Execute(buf, map[string]any{"Report": r, "Scenarios": scs, "Style": template.CSS(Style)})
}

// section is everything the page shows of one scenario run.
func section(res *Result, i int) htmlScenario {
	hs := htmlScenario{Result: res, Anchor: fmt.Sprintf("s%d-%s", i, res.Name),
		Early: check.Count(res.Violations, check.KindEarlyPod), P50: noLatency, P99: noLatency}
	hs.EarlyExpected = hs.Early > 0 && res.Passed
	if res.HasLatency() {
		hs.P50, hs.P99 = msLabel(res.ReleaseLatencyMS.P50), msLabel(res.ReleaseLatencyMS.P99)
	}
	for _, w := range res.FaultWindows {
		if w.End > w.Start {
			hs.Windows = append(hs.Windows, fmt.Sprintf("%s from %s to %s", w.Name, shortDuration(w.Start), shortDuration(w.End)))
		} else {
			hs.Windows = append(hs.Windows, fmt.Sprintf("%s at %s", w.Name, shortDuration(w.Start)))
		}
	}
	nodes := views(res)
	for _, n := range nodes {
		if n.problem == "" {
			continue
		}
		if len(hs.Problems) == maxProblems {
			hs.MoreProblems++
			continue
		}
		hs.Problems = append(hs.Problems, problem{Node: n.rec.Name, Reason: n.problem})
	}
	end := span(res)
	hs.Overview = overview(res, end)
	if len(res.ReleaseLatency) > 0 {
		hs.CDF = CDFChart([]CDFSeries{SamplesCDF("release latency", "released", res.ReleaseLatency)}, 380, 250)
	}
	hs.Folded = len(nodes) > foldRows
	order(nodes, hs.Folded)
	hs.Rows = rows(res, nodes, end)
	return hs
}

// span is how much time the pictures cover: the run, and anything recorded after it.
func span(res *Result) time.Duration {
	end := time.Duration(res.DurationMS) * time.Millisecond
	see := func(t time.Time) {
		if !t.IsZero() {
			end = max(end, t.Sub(res.Start))
		}
	}
	for i := range res.Records {
		rec := &res.Records[i]
		for _, m := range []record.Mark{rec.Created, rec.Tainted, rec.InitReady, rec.Released, rec.Deleted} {
			see(m.Time)
		}
		for _, b := range rec.Bindings {
			see(b.Mark.Time)
		}
	}
	for _, w := range res.FaultWindows {
		end = max(end, w.End)
	}
	return max(end, time.Second)
}

// nodeView is one node record as the rows draw it.
type nodeView struct {
	rec     *record.NodeRecord
	label   string
	latency time.Duration // init ready to released; -1 if it has none
	problem string
}

// views are the run's node records, each with its short label, its release latency and
// what went wrong on it, in creation order.
func views(res *Result) []nodeView {
	recs := make([]*record.NodeRecord, len(res.Records))
	for i := range res.Records {
		recs[i] = &res.Records[i]
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Created.Time.Before(recs[j].Created.Time) })
	reasons := problemReasons(res)
	seen := map[string]int{}
	out := make([]nodeView, 0, len(recs))
	for _, rec := range recs {
		n := nodeView{rec: rec, label: strings.TrimPrefix(rec.Name, res.Name+"-"), latency: -1, problem: reasons[rec.Name]}
		if seen[rec.Name]++; seen[rec.Name] > 1 {
			n.label += fmt.Sprintf(" #%d", seen[rec.Name])
		}
		if ready := rec.ReadyMoment(); !rec.Released.IsZero() && !ready.IsZero() && !ready.After(rec.Released.Time) {
			n.latency = rec.Released.Time.Sub(ready)
		}
		if stuck(rec) {
			n.problem = join(stuckReason(rec, res.Start), n.problem)
		}
		out = append(out, n)
	}
	return out
}

// problemReasons says, per node name, what the checker found wrong with it: its violations,
// early Pods counted together.
func problemReasons(res *Result) map[string]string {
	type acc struct {
		early int
		first string
		other []string
	}
	by := map[string]*acc{}
	var names []string
	for _, v := range res.Violations {
		if v.Node == "" {
			continue
		}
		a := by[v.Node]
		if a == nil {
			a = &acc{}
			by[v.Node] = a
			names = append(names, v.Node)
		}
		if v.Kind == check.KindEarlyPod {
			if a.early++; a.early == 1 {
				a.first = fmt.Sprintf("%s, %s", v.Pod, v.Detail)
			}
			continue
		}
		if len(a.other) < 3 {
			a.other = append(a.other, v.Kind+": "+v.Detail)
		}
	}
	out := map[string]string{}
	for _, n := range names {
		a := by[n]
		var parts []string
		switch a.early {
		case 0:
		case 1:
			parts = append(parts, "early Pod "+a.first)
		default:
			parts = append(parts, fmt.Sprintf("%d early Pods, first %s", a.early, a.first))
		}
		out[n] = strings.Join(append(parts, a.other...), "; ")
	}
	return out
}

// stuck: a gated node still held when the run ended, as the checker counts it.
func stuck(rec *record.NodeRecord) bool {
	return rec.Gated && rec.Released.IsZero() && rec.Deleted.IsZero() && !rec.Tainted.IsZero()
}

// stuckReason says how far a stuck node got: was its init Pod ever bound, was it ready.
func stuckReason(rec *record.NodeRecord, start time.Time) string {
	var bound time.Time
	for _, b := range rec.Bindings {
		if b.Init && (bound.IsZero() || b.Mark.Time.Before(bound)) {
			bound = b.Mark.Time
		}
	}
	switch {
	case bound.IsZero():
		return "never released: its init Pod was never bound"
	case rec.InitReady.IsZero():
		return fmt.Sprintf("never released: init Pod bound at %s, never ready", since(bound, start))
	}
	return fmt.Sprintf("never released: init Pods ready at %s", since(rec.InitReady.Time, start))
}

func since(t, start time.Time) string {
	return shortDuration(t.Sub(start).Round(100 * time.Millisecond))
}

func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// order puts problem nodes first; the rest stay in creation order or, when folded (a large
// run, read for its tail), go worst release latency first.
func order(nodes []nodeView, byLatency bool) {
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if (a.problem != "") != (b.problem != "") {
			return a.problem != ""
		}
		if byLatency && a.problem == "" {
			return a.latency > b.latency
		}
		return false
	})
}

// overview draws the run as cumulative curves: nodes in the upper panel, workload Pods in
// the lower, both under the fault windows.
func overview(res *Result, end time.Duration) template.HTML {
	const width, left, right, nodeH, podH, gap = 780.0, 52.0, 16.0, 150.0, 90.0, 22.0
	ax := timeAxis{x0: left, width: width - left - right, end: end}
	lines := bandLines(res.FaultWindows, ax)
	top := 8 + float64(max(1, len(lines)))*13
	podTop := top + nodeH + gap
	bottom := podTop + podH
	s := newSVG(width, bottom+30, "chart")

	for i, line := range lines {
		for _, w := range line {
			x := ax.x(w.Start)
			s.text(x+2, 15+float64(i)*13, "bandlabel", w.Name)
		}
	}
	bands(s, res.FaultWindows, ax, top, bottom)
	ax.ticks(s, bottom+14, top, bottom)

	var joined, tainted, ready, released, bound, early []time.Duration
	at := func(t time.Time) time.Duration { return t.Sub(res.Start) }
	for i := range res.Records {
		rec := &res.Records[i]
		joined = append(joined, at(rec.Created.Time))
		if !rec.Tainted.IsZero() {
			tainted = append(tainted, at(rec.Tainted.Time))
		}
		if t := rec.ReadyMoment(); !t.IsZero() {
			ready = append(ready, at(t))
		}
		if !rec.Released.IsZero() {
			released = append(released, at(rec.Released.Time))
		}
		for _, b := range rec.Bindings {
			if b.Workload() {
				bound = append(bound, at(boundAt(rec, b)))
			}
		}
	}
	for _, v := range res.Violations {
		if v.Kind == check.KindEarlyPod {
			early = append(early, time.Duration(v.AtMS)*time.Millisecond)
		}
	}

	panel := func(y0, h float64, title string, total int, curves ...curve) {
		total = max(total, 1)
		s.rect(left, y0, ax.width, h, "frame")
		y := func(n int) float64 { return y0 + h - float64(n)/float64(total)*h }
		s.text(left-5, y0+10, "tick r", fmt.Sprint(total))
		s.text(left-5, y0+h, "tick r", "0")
		s.text(left+ax.width, y0-5, "title r", title)
		for _, c := range curves {
			s.path(stepPath(c.times, ax, y), c.class)
		}
	}
	panel(top, nodeH, "nodes", len(joined), curve{joined, "joined"}, curve{tainted, "tainted"}, curve{ready, "ready"}, curve{released, "released"})
	panel(podTop, podH, "workload Pods", max(len(bound), len(early)), curve{bound, "bound"}, curve{early, "early"})
	s.text(left+ax.width/2, bottom+28, "axis c", "time since the run started")
	return s.html()
}

// curve is a cumulative count: the moments it rises, and its class (colour).
type curve struct {
	times []time.Duration
	class string
}

// bandLines spreads the fault windows' names over as few lines as keep them apart.
func bandLines(ws []scenario.Window, ax timeAxis) [][]scenario.Window {
	var lines [][]scenario.Window
	var ends []float64
	for _, w := range ws {
		x0 := ax.x(w.Start)
		x1 := x0 + float64(len(w.Name))*6.2 + 8
		i := 0
		for i < len(lines) && x0 < ends[i] {
			i++
		}
		if i == len(lines) {
			lines, ends = append(lines, nil), append(ends, 0)
		}
		lines[i], ends[i] = append(lines[i], w), x1
	}
	return lines
}

// rows draws one row per node: the bar grey while the node holds the taint, a thin green
// one once released (amber if it was never tainted), a blue tick when its init Pods were ready, a
// dot per workload Pod bound to it, red when early.
func rows(res *Result, nodes []nodeView, end time.Duration) template.HTML {
	const labelW, latW, plotW, rowH, top = 118.0, 62.0, 700.0, 12.0, 22.0
	if len(nodes) == 0 {
		return ""
	}
	left := labelW + latW + 8
	ax := timeAxis{x0: left, width: plotW, end: end}
	height := top + float64(len(nodes))*rowH + 6
	s := newSVG(left+plotW+16, height, "rows")
	ax.ticks(s, 14, top, height)
	s.text(labelW+latW, 12, "tick r", "latency")

	early := map[string]bool{}
	for _, v := range res.Violations {
		if v.Kind == check.KindEarlyPod {
			early[v.Node+"\x00"+v.Pod] = true
		}
	}
	at := func(t time.Time) time.Duration { return t.Sub(res.Start) }
	for i, n := range nodes {
		rec := n.rec
		s.group(top+float64(i)*rowH, rowTitle(n, res.Start))
		labelClass := ""
		if n.problem != "" {
			s.rect(0, 0, left+plotW, rowH, "problem")
			labelClass = "bad"
		}
		s.text(4, 9.5, labelClass, n.label)
		lat := noLatency
		if n.latency >= 0 {
			lat = msLabel(float64(n.latency.Round(time.Millisecond).Milliseconds()))
		}
		s.text(labelW+latW, 9.5, "r", lat)

		x0, xEnd := ax.x(at(rec.Created.Time)), ax.x(end)
		if !rec.Deleted.IsZero() {
			xEnd = ax.x(at(rec.Deleted.Time))
		}
		switch {
		case !rec.Released.IsZero():
			xr := ax.x(at(rec.Released.Time))
			s.rect(x0, 2, xr-x0, 8, "held")
			s.rect(xr, 4, xEnd-xr, 4, "rel")
		case !rec.Tainted.IsZero():
			s.rect(x0, 2, xEnd-x0, 8, "held")
		default:
			s.rect(x0, 2, xEnd-x0, 8, "open")
		}
		if t := rec.ReadyMoment(); !t.IsZero() {
			s.rect(ax.x(at(t))-1, 1, 2, 10, "init")
		}
		var pods, epods strings.Builder
		for _, b := range rec.Bindings {
			if !b.Workload() {
				continue
			}
			d := &pods
			if early[rec.Name+"\x00"+b.Pod] {
				d = &epods
			}
			fmt.Fprintf(d, "M%s 6h0", num(ax.x(at(boundAt(rec, b)))))
		}
		s.path(pods.String(), "pods")
		s.path(epods.String(), "epods")
		s.end()
	}
	// The fault windows go over the rows, translucent, so that the bars show through.
	bands(s, res.FaultWindows, ax, top, height)
	return s.html()
}

// bands shades the fault windows from y0 to y1; a fault that is one act is a dashed line.
func bands(s *svg, ws []scenario.Window, ax timeAxis, y0, y1 float64) {
	for _, w := range ws {
		x0, x1 := ax.x(w.Start), ax.x(w.End)
		if x1-x0 < 1.5 {
			s.line(x0, y0, x0, y1, "instant")
			continue
		}
		s.rect(x0, y0, x1-x0, y1-y0, "band")
	}
}

// boundAt is when a Pod was bound, for the pictures. The times are when this process
// received the events, and the Pod and Node watches deliver them in any interleaving; the
// order is the resourceVersions'. A Pod bound after its node's release, by resourceVersion,
// is drawn no earlier than the release, even if its event arrived first.
func boundAt(rec *record.NodeRecord, b record.Binding) time.Time {
	if !rec.Released.IsZero() && b.Mark.RV > rec.Released.RV && b.Mark.Time.Before(rec.Released.Time) {
		return rec.Released.Time
	}
	return b.Mark.Time
}

// rowTitle is a row's tooltip: the node's moments and, if it went wrong, how.
func rowTitle(n nodeView, start time.Time) string {
	rec := n.rec
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: joined %s", rec.Name, since(rec.Created.Time, start))
	if !rec.Tainted.IsZero() && rec.Tainted != rec.Created {
		fmt.Fprintf(&sb, ", tainted %s", since(rec.Tainted.Time, start))
	}
	if t := rec.ReadyMoment(); !t.IsZero() {
		fmt.Fprintf(&sb, ", ready %s", since(t, start))
	}
	if !rec.Released.IsZero() {
		fmt.Fprintf(&sb, ", released %s", since(rec.Released.Time, start))
	}
	pods := 0
	for _, b := range rec.Bindings {
		if b.Workload() {
			pods++
		}
	}
	fmt.Fprintf(&sb, ", %d Pods", pods)
	if n.problem != "" {
		sb.WriteString("; " + n.problem)
	}
	return sb.String()
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(ms int64) float64 { return float64(ms) / 1000 },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>startupgate simulation</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>{{.Style}}</style></head><body>
<h1>startupgate simulation</h1>
<p class="muted">backend {{.Report.Backend}} · gate {{.Report.Gate}} · seed {{.Report.Seed}} · {{len .Scenarios}} scenario runs</p>
<table><tr><th>scenario</th><th>result</th><th>nodes</th><th>workload pods</th><th>early pods</th><th>released</th><th>stuck</th><th>release p50</th><th>release p99</th><th>wall</th></tr>
{{range .Scenarios}}<tr><td><a href="#{{.Anchor}}">{{.Name}}</a></td><td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</td>
<td>{{.Nodes}}</td><td>{{.WorkloadPods}}</td><td{{if .EarlyExpected}} class="muted"{{else if .Early}} class="fail"{{end}}>{{.Early}}{{if .EarlyExpected}} (expected){{end}}</td><td>{{.Released}}</td><td>{{.Stuck}}</td>
<td>{{.P50}}</td><td>{{.P99}}</td><td>{{printf "%.1f" (seconds .DurationMS)}} s</td></tr>
{{end}}</table>
{{range .Scenarios}}
<h2 id="{{.Anchor}}">{{.Name}} <span class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</span>
<span class="muted">· gate {{.Gate}} · seed {{.Seed}}</span></h2>
<p>{{.Description}}</p>
{{range .Failures}}<p class="fail">{{.}}</p>{{end}}
{{if .Reproduce}}<p>reproduce: <code>{{.Reproduce}}</code></p>{{end}}
<p class="muted">{{.Nodes}} nodes · {{.Released}} released · {{.Stuck}} stuck · {{.WorkloadPods}} workload Pods, {{.Early}} early{{if .EarlyExpected}} (expected){{end}} ·
release latency p50 {{.P50}}, p99 {{.P99}}{{if .Windows}} · faults: {{range $i, $w := .Windows}}{{if $i}}; {{end}}{{$w}}{{end}}{{end}}</p>
<div class="charts"><div>{{.Overview}}
<div class="legend"><span><i class="sw joined"></i>joined</span><span><i class="sw tainted"></i>tainted</span><span><i class="sw ready"></i>init ready</span><span><i class="sw released"></i>released</span><span><i class="sw bound"></i>workload Pods bound</span><span><i class="sw early"></i>early Pods</span><span><i class="sw band"></i>fault window</span></div></div>
<div style="width:380px"><h3>release latency, init ready to released</h3>{{if .CDF}}{{.CDF}}{{else}}<p class="muted">No release latency: no node was released after its init Pods were ready.</p>{{end}}</div></div>
{{if .Problems}}{{if .Passed}}<h3>nodes that went wrong, as this scenario expects</h3>{{else}}<h3 class="fail">nodes that went wrong</h3>{{end}}
<table class="problems"><tr><th>node</th><th>what happened</th></tr>
{{range .Problems}}<tr><td>{{.Node}}</td><td>{{.Reason}}</td></tr>{{end}}
{{if .MoreProblems}}<tr><td colspan="2" class="muted">and {{.MoreProblems}} more, first among the rows below</td></tr>{{end}}</table>{{end}}
{{if .Rows}}{{if .Folded}}<details><summary>{{.Nodes}} nodes, one row each: nodes that went wrong first, then worst release latency first</summary>{{else}}<h3>nodes</h3>{{end}}
<div class="legend"><span><i class="sw held"></i>tainted (held)</span><span><i class="sw rel"></i>released</span><span><i class="sw open"></i>never tainted</span><span><i class="sw init"></i>init ready</span><span><i class="sw bound"></i>workload Pod bound</span><span><i class="sw early"></i>early Pod</span><span><i class="sw band"></i>fault window</span></div>
{{.Rows}}{{if .Folded}}</details>{{end}}{{end}}
{{if .Notes}}<details><summary>run notes</summary><pre>{{range .Notes}}{{.}}
{{end}}</pre></details>{{end}}
{{end}}
</body></html>
`))

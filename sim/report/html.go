package report

import (
	"html/template"
	"os"
	"sort"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// The HTML timeline: one row per node, time left to right. A grey bar while the node holds
// the taint, green once released; a blue tick when its init Pods were ready; a dot per
// workload binding, red when early. Rows are 6px, so 1000 nodes fit in a scrolling page.
type htmlRow struct {
	Y, TextY int
	Name     string
	// X0 is creation; the bar is held (tainted) then released, or untainted throughout.
	X0, XR, XInit           float64
	WHeld, WOpen, WReleased float64
	HasInit, Label, Tainted bool
	Marks                   []htmlMark
}

type htmlMark struct {
	X, Y  float64
	Early bool
	Pod   string
}

type htmlScenario struct {
	*Result
	Width, Height int
	Rows          []htmlRow
	Ticks         []htmlTick
	Early         int
}

type htmlTick struct {
	X     float64
	Label string
}

const (
	rowHeight = 6
	plotWidth = 1000
	labelW    = 160
)

// WriteHTML writes the per-node timeline picture of every scenario.
func (r *Report) WriteHTML(path string) error {
	var scs []htmlScenario
	for _, res := range r.Scenarios {
		scs = append(scs, timeline(res))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return htmlTemplate.Execute(f, map[string]any{"Report": r, "Scenarios": scs})
}

func timeline(res *Result) htmlScenario {
	end := time.Duration(res.DurationMS) * time.Millisecond
	if end <= 0 {
		end = time.Second
	}
	x := func(t time.Time) float64 {
		if t.IsZero() {
			return labelW + plotWidth
		}
		return labelW + float64(t.Sub(res.Start))/float64(end)*plotWidth
	}
	recs := append([]record.NodeRecord(nil), res.Records...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Created.Time.Before(recs[j].Created.Time) })
	hs := htmlScenario{Result: res, Width: labelW + plotWidth + 20, Height: len(recs)*rowHeight + 40}
	for i, rec := range recs {
		y := 20 + i*rowHeight
		xEnd := float64(labelW + plotWidth)
		if !rec.Deleted.IsZero() {
			xEnd = x(rec.Deleted.Time)
		}
		row := htmlRow{Y: y, TextY: y + 5, Name: rec.Name, X0: x(rec.Created.Time), XR: x(rec.Released.Time),
			HasInit: !rec.InitReady.IsZero(), XInit: x(rec.ReadyMoment()), Label: len(recs) <= 120, Tainted: !rec.Tainted.IsZero()}
		switch {
		case !rec.Released.IsZero():
			row.WHeld, row.WReleased = row.XR-row.X0, xEnd-row.XR
		case row.Tainted:
			row.WHeld = xEnd - row.X0
		default:
			row.WOpen = xEnd - row.X0
		}
		for _, b := range rec.Bindings {
			if !b.Workload() {
				continue
			}
			early := rec.Gated && (rec.Released.IsZero() || b.Mark.RV < rec.Released.RV)
			row.Marks = append(row.Marks, htmlMark{X: x(b.Mark.Time), Y: float64(y + 2), Early: early, Pod: b.Pod})
			if early {
				hs.Early++
			}
		}
		hs.Rows = append(hs.Rows, row)
	}
	step := niceStep(end)
	for t := time.Duration(0); t <= end; t += step {
		hs.Ticks = append(hs.Ticks, htmlTick{X: labelW + float64(t)/float64(end)*plotWidth, Label: t.String()})
	}
	return hs
}

func niceStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute} {
		if d/s <= 12 {
			return s
		}
	}
	return 10 * time.Minute
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>startupgate simulation</title>
<style>
body{font:14px system-ui,sans-serif;margin:20px;color:#222}
h2{margin:28px 0 4px} .pass{color:#1a7f37} .fail{color:#cf222e}
table{border-collapse:collapse} td,th{padding:2px 10px;text-align:right} th{border-bottom:1px solid #ccc}
td:first-child,th:first-child{text-align:left}
.legend span{display:inline-block;margin-right:16px}
.sw{display:inline-block;width:14px;height:8px;margin-right:4px;vertical-align:middle}
svg text{font:9px monospace;fill:#555}
</style></head><body>
<h1>startupgate simulation</h1>
<p>backend {{.Report.Backend}} · gate {{.Report.Gate}} · seed {{.Report.Seed}}</p>
<table><tr><th>scenario</th><th>result</th><th>nodes</th><th>workload pods</th><th>early pods</th><th>released</th><th>stuck</th><th>release p50 / p99</th><th>wall</th></tr>
{{range .Scenarios}}<tr><td><a href="#{{.Name}}-{{.Seed}}">{{.Name}}</a></td><td class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</td>
<td>{{.Nodes}}</td><td>{{.WorkloadPods}}</td><td>{{.Early}}</td><td>{{.Released}}</td><td>{{.Stuck}}</td>
<td>{{printf "%.0f" .ReleaseLatencyMS.P50}} / {{printf "%.0f" .ReleaseLatencyMS.P99}} ms</td><td>{{.DurationMS}} ms</td></tr>{{end}}
</table>
<p class="legend"><span><i class="sw" style="background:#bbb"></i>tainted (held)</span><span><i class="sw" style="background:#f0c36b"></i>untainted, not released</span>
<span><i class="sw" style="background:#8fd19e"></i>released</span><span><i class="sw" style="background:#1f6feb"></i>init ready</span>
<span><i class="sw" style="background:#333"></i>workload bound</span><span><i class="sw" style="background:#e5534b"></i>early pod (violation)</span></p>
{{range .Scenarios}}
<h2 id="{{.Name}}-{{.Seed}}">{{.Name}} <span class="{{if .Passed}}pass{{else}}fail{{end}}">{{if .Passed}}pass{{else}}FAIL{{end}}</span></h2>
<p>{{.Description}}</p>
{{range .Failures}}<p class="fail">{{.}}</p>{{end}}
<svg width="{{.Width}}" height="{{.Height}}" xmlns="http://www.w3.org/2000/svg">
{{range .Ticks}}<line x1="{{.X}}" x2="{{.X}}" y1="12" y2="{{$.Height}}" stroke="#eee"/><text x="{{.X}}" y="10">{{.Label}}</text>{{end}}
{{range .Rows}}<g><title>{{.Name}}</title>{{if .Label}}<text x="0" y="{{.TextY}}">{{.Name}}</text>{{end}}
{{if .WHeld}}<rect x="{{.X0}}" y="{{.Y}}" width="{{.WHeld}}" height="4" fill="#bbb"/>{{end}}
{{if .WOpen}}<rect x="{{.X0}}" y="{{.Y}}" width="{{.WOpen}}" height="4" fill="#f0c36b"/>{{end}}
{{if .WReleased}}<rect x="{{.XR}}" y="{{.Y}}" width="{{.WReleased}}" height="4" fill="#8fd19e"/>{{end}}
{{if .HasInit}}<rect x="{{.XInit}}" y="{{.Y}}" width="1.5" height="5" fill="#1f6feb"/>{{end}}
{{range .Marks}}<circle cx="{{.X}}" cy="{{.Y}}" r="{{if .Early}}2.2{{else}}1.2{{end}}" fill="{{if .Early}}#e5534b{{else}}#333{{end}}"><title>{{.Pod}}</title></circle>{{end}}
</g>{{end}}
</svg>
{{end}}
</body></html>
`))

package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The pictures are inline SVG written by hand: no script, no font, no file beside the
// page, so that a report opens from a CI artifact as it is. Colours and line styles are
// classes of Style, which keeps a 5000-node page small.

// svg builds one <svg> element. Every text it writes is escaped, so the element is
// well-formed XML as well as HTML.
type svg struct{ b strings.Builder }

func newSVG(width, height float64, class string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %[1]s %[2]s" class="%s">`, num(width), num(height), class)
	return s
}

// num formats a coordinate with at most one decimal: enough for a pixel, short to write.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func esc(s string) string { return html.EscapeString(s) }

func (s *svg) rect(x, y, w, h float64, class string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" class="%s"/>`, num(x), num(y), num(max(w, 0)), num(max(h, 0)), class)
}

func (s *svg) line(x1, y1, x2, y2 float64, class string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="%s"/>`, num(x1), num(y1), num(x2), num(y2), class)
}

// text writes a label at x, y; class "r" anchors it at its end, "c" at its middle.
func (s *svg) text(x, y float64, class, text string) {
	if class != "" {
		class = ` class="` + class + `"`
	}
	fmt.Fprintf(&s.b, `<text x="%s" y="%s"%s>%s</text>`, num(x), num(y), class, esc(text))
}

// vtext writes a label turned to read upwards, centred on x, y.
func (s *svg) vtext(x, y float64, class, text string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" transform="rotate(-90 %[1]s %[2]s)" class="%s">%s</text>`, num(x), num(y), class, esc(text))
}

func (s *svg) path(d, class string) {
	if d != "" {
		fmt.Fprintf(&s.b, `<path d="%s" class="%s"/>`, d, class)
	}
}

func (s *svg) circle(x, y, r float64, class, title string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" class="%s"><title>%s</title></circle>`, num(x), num(y), num(r), class, esc(title))
}

// group opens a <g> moved down by y, with a tooltip; close it with end.
func (s *svg) group(y float64, title string) {
	fmt.Fprintf(&s.b, `<g transform="translate(0 %s)"><title>%s</title>`, num(y), esc(title))
}

func (s *svg) end() { s.b.WriteString(`</g>`) }

func (s *svg) html() template.HTML {
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String()) //nolint:gosec // every text and attribute above is escaped or numeric
}

// timeAxis maps a run's time to x: offsets from 0 to end onto [x0, x0+width].
type timeAxis struct {
	x0, width float64
	end       time.Duration
}

func (a timeAxis) x(d time.Duration) float64 {
	d = min(max(d, 0), a.end)
	return a.x0 + float64(d)/float64(a.end)*a.width
}

// ticks draws the time ticks: grid lines from y0 to y1, and their labels at labelY.
func (a timeAxis) ticks(s *svg, labelY, y0, y1 float64) {
	step := niceStep(a.end)
	for t := time.Duration(0); t <= a.end; t += step {
		x := a.x(t)
		s.line(x, y0, x, y1, "grid")
		s.text(x, labelY, "tick c", shortDuration(t))
	}
}

func niceStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute,
		2 * time.Minute, 5 * time.Minute} {
		if d/s <= 10 {
			return s
		}
	}
	return 10 * time.Minute
}

// shortDuration is a tick label: 0, 250ms, 1.5s, 30s, 2m, 2m30s.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return fmt.Sprintf("%dm%ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
}

// stepPath is a cumulative count over time as a step path: at each moment of times (which
// it sorts) the count rises by one. Moments that fall on the same pixel are drawn as one
// step, so the path stays short whatever the count. y maps a count to a y coordinate.
func stepPath(times []time.Duration, a timeAxis, y func(n int) float64) string {
	if len(times) == 0 {
		return ""
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var sb strings.Builder
	fmt.Fprintf(&sb, "M%s %s", num(a.x0), num(y(0)))
	for i := 0; i < len(times); {
		x := a.x(times[i])
		j := i
		for j < len(times) && math.Round(a.x(times[j])) == math.Round(x) {
			j++
		}
		fmt.Fprintf(&sb, "H%sV%s", num(x), num(y(j)))
		i = j
	}
	fmt.Fprintf(&sb, "H%s", num(a.x0+a.width))
	return sb.String()
}

// CDFPoint is one point of a latency distribution: the fraction Q of samples at or below MS
// milliseconds. Label, if set, is written beside its dot (p99, max).
type CDFPoint struct {
	MS, Q float64
	Label string
}

// CDFSeries is one distribution of a CDF chart. Step draws an empirical distribution, every
// sample; without it the points are a few known quantiles, joined by straight lines and
// marked with dots (an interpolation between them, and the chart says so).
type CDFSeries struct {
	Name, Class string
	Points      []CDFPoint
	Step        bool
}

// SamplesCDF is the empirical distribution of samples, thinned to at most 400 points.
func SamplesCDF(name, class string, samples []time.Duration) CDFSeries {
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	stride := max(1, len(s)/400)
	out := CDFSeries{Name: name, Class: class, Step: true}
	for i := 0; i < len(s); i += stride {
		out.Points = append(out.Points, CDFPoint{MS: ms(s[i]), Q: float64(i+1) / float64(len(s))})
	}
	if n := len(s); n > 0 && (n-1)%stride != 0 {
		out.Points = append(out.Points, CDFPoint{MS: ms(s[n-1]), Q: 1})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// CDFChart draws latency distributions: the fraction of samples at or below a latency, on
// a log time axis and a scale of nines (guides at the median, p90, p99 and p99.9). An empty
// chart says there is nothing to draw.
func CDFChart(series []CDFSeries, width, height float64) template.HTML {
	const left, right, top, bottom = 54.0, 26.0, 10.0, 34.0
	s := newSVG(width, height, "chart")
	pw, ph := width-left-right, height-top-bottom
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, se := range series {
		for _, p := range se.Points {
			lo, hi = math.Min(lo, math.Max(p.MS, 1)), math.Max(hi, math.Max(p.MS, 1))
		}
	}
	if math.IsInf(lo, 0) {
		s.text(width/2, height/2, "note c", "no latencies to draw")
		return s.html()
	}
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	x := func(v float64) float64 { return left + (math.Log10(math.Max(v, 1))-d0)/(d1-d0)*pw }
	// The fraction is on a scale of nines, -log10(1-q), up to 0.999: the median sits low and
	// the tail, which is what a latency distribution is read for, gets most of the height.
	y := func(q float64) float64 { return top + (1-nines(q)/3)*ph }
	for d := d0; d <= d1; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > d1+1e-9 {
				break
			}
			if m != 1 {
				s.line(x(v), top, x(v), top+ph, "grid minor")
				continue
			}
			s.line(x(v), top, x(v), top+ph, "grid")
			s.text(x(v), top+ph+13, "tick c", msLabel(v))
		}
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		s.line(left, y(q), left+pw, y(q), "grid")
		s.text(left-4, y(q)+3, "tick r", strconv.FormatFloat(q, 'f', -1, 64))
	}
	s.rect(left, top, pw, ph, "frame")
	s.text(left+pw/2, height-4, "axis c", "release latency (log scale)")
	s.vtext(11, top+ph/2, "axis c", "fraction of nodes")
	for _, se := range series {
		var d strings.Builder
		for i, p := range se.Points {
			switch {
			case i == 0 && se.Step:
				fmt.Fprintf(&d, "M%s %sV%s", num(x(p.MS)), num(y(0)), num(y(p.Q)))
			case i == 0:
				fmt.Fprintf(&d, "M%s %s", num(x(p.MS)), num(y(p.Q)))
			case se.Step:
				fmt.Fprintf(&d, "H%sV%s", num(x(p.MS)), num(y(p.Q)))
			default:
				fmt.Fprintf(&d, "L%s %s", num(x(p.MS)), num(y(p.Q)))
			}
		}
		s.path(d.String(), "cdf "+se.Class)
		if se.Step {
			continue
		}
		for _, p := range se.Points {
			s.circle(x(p.MS), y(p.Q), 3, "dot "+se.Class, fmt.Sprintf("%s %s: %s", se.Name, p.Label, msLabel(p.MS)))
		}
	}
	return s.html()
}

// Bar is one bar of a BarChart: its value, and the text written after it.
type Bar struct {
	Label, Class string
	Value        float64
	Text         string
}

// BarGroup is bars drawn together under one label (a burst size).
type BarGroup struct {
	Label string
	Bars  []Bar
}

// BarChart draws horizontal bars, in groups, on one linear scale from 0.
func BarChart(groups []BarGroup, width float64) template.HTML {
	const groupW, barW, right, barH, gap, groupGap = 96.0, 64.0, 90.0, 14.0, 3.0, 12.0
	height, top := 8.0, 8.0
	top2 := top
	hi := 0.0
	for _, g := range groups {
		for _, b := range g.Bars {
			hi = math.Max(hi, b.Value)
		}
		height += float64(len(g.Bars))*(barH+gap) + groupGap
	}
	s := newSVG(width, height, "chart")
	x0, pw := groupW+barW, width-groupW-barW-right
	for _, g := range groups {
		s.text(0, top2+barH-3, "title", g.Label)
		for _, b := range g.Bars {
			w := 0.0
			if hi > 0 {
				w = b.Value / hi * pw
			}
			s.text(x0-6, top2+barH-3, "r", b.Label)
			s.rect(x0, top2, w, barH, "bar "+b.Class)
			s.text(x0+w+5, top2+barH-3, "", b.Text)
			top2 += barH + gap
		}
		top2 += groupGap
	}
	return s.html()
}

// nines is q on a scale of nines: 0.9 is 1, 0.99 is 2, 0.999 and above are 3.
func nines(q float64) float64 { return -math.Log10(math.Max(1-q, 0.001)) }

// msLabel is a latency for an axis, a table or a tooltip, to about three figures: 0.4 ms,
// 25 ms, 250 ms, 2.87 s, 1 s, 45.2 s.
func msLabel(v float64) string {
	trim := func(s string) string { return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") }
	switch {
	case v >= 100000:
		return fmt.Sprintf("%.0f s", v/1000)
	case v >= 10000:
		return trim(fmt.Sprintf("%.1f", v/1000)) + " s"
	case v >= 1000:
		return trim(fmt.Sprintf("%.2f", v/1000)) + " s"
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	}
	return trim(fmt.Sprintf("%.1f", v)) + " ms"
}

// Style is the pictures' CSS, for any page that shows them (the benchmark's too).
const Style = `
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:20px 28px;color:#1f2328;max-width:1240px}
h1{font-size:22px} h2{margin:36px 0 4px;font-size:18px;border-top:1px solid #d0d7de;padding-top:14px}
h3{font-size:14px;margin:14px 0 4px}
.pass{color:#1a7f37} .fail{color:#cf222e} .muted{color:#656d76}
table{border-collapse:collapse;margin:6px 0} td,th{padding:2px 10px;text-align:right;vertical-align:top} th{border-bottom:1px solid #d0d7de}
td:first-child,th:first-child{text-align:left} table.problems td,table.problems th,table.left td,table.left th{text-align:left}
.legend{margin:2px 0 6px;font-size:12px;color:#424a53} .legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:16px;height:8px;margin-right:5px;vertical-align:middle;border-radius:1px}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
details{margin:8px 0} summary{cursor:pointer;color:#0969da}
svg text{font:11px ui-monospace,SFMono-Regular,Menlo,monospace;fill:#424a53} svg .r{text-anchor:end} svg .c{text-anchor:middle}
svg .tick{font-size:10px;fill:#656d76} svg .axis{font-size:11px;fill:#424a53} svg .note{font-size:12px;fill:#656d76}
svg .title{font-size:12px;font-weight:600;fill:#1f2328} svg .bad{fill:#cf222e;font-weight:600}
svg .grid{stroke:#eaeef2;stroke-width:1} svg .grid.minor{stroke:#f4f6f8}
svg .frame{fill:none;stroke:#d0d7de}
svg .band{fill:#f5a623;fill-opacity:.18} svg .rows .band{fill-opacity:.3} svg .instant{stroke:#d4820a;stroke-width:1.5;stroke-dasharray:4 3}
svg .bandlabel{font-size:10px;fill:#9a5b00}
svg path{fill:none;stroke-width:1.8} svg .cdf{stroke-width:2}
svg .joined{stroke:#d0d7de;stroke-width:5} svg .tainted{stroke:#8250df} svg .ready{stroke:#0969da} svg .released{stroke:#1a7f37}
svg .bound{stroke:#1f2328} svg .early{stroke:#cf222e;stroke-width:2.2}
svg .gate{stroke:#0969da} svg .floor{stroke:#8c959f} svg .policy{stroke:#8250df}
svg circle.gate,svg rect.gate{fill:#0969da} svg circle.floor,svg rect.floor{fill:#8c959f} svg circle.policy,svg rect.policy{fill:#8250df} svg rect.bar{stroke:none} svg .dot{stroke:#fff;stroke-width:1}
svg .held{fill:#c9ced4} svg .open{fill:#f0c36b} svg .rel{fill:#8fd19e} svg .init{fill:#0969da}
svg .pods{stroke:#1f2328;stroke-width:3;stroke-linecap:round} svg .epods{stroke:#cf222e;stroke-width:4.5;stroke-linecap:round}
svg .problem{fill:#ffebe9}
.sw.joined{background:#d0d7de} .sw.tainted{background:#8250df} .sw.ready{background:#0969da} .sw.released{background:#1a7f37}
.sw.bound{background:#1f2328} .sw.early{background:#cf222e} .sw.band{background:#f5a62340;border:1px solid #f5a623}
.sw.held{background:#c9ced4} .sw.open{background:#f0c36b} .sw.rel{background:#8fd19e} .sw.init{background:#0969da}
.sw.gate{background:#0969da} .sw.floor{background:#8c959f} .sw.policy{background:#8250df}
`

package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// large is a synthetic 5000-node burst with two webhook Pods per node: init Pods ready
// 2s ± 1s after the node joins, a long release tail while the apiserver is down, three
// nodes that are never released (two of them with an early Pod each), and one node whose
// init Pod never bound.
func large(n int) *Result {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	at := func(d time.Duration) time.Time { return start.Add(d) }
	res := &Result{Name: "burst-5000", File: "scenarios/burst-5000.yaml", Gate: "in-process", Seed: 1,
		Description: "synthetic: a 5000-node burst with an apiserver restart", Nodes: n, Start: start,
		FaultWindows: []scenario.Window{{Name: "apiserver down", Start: 40 * time.Second, End: 46 * time.Second},
			{Name: "2 bypass Pods", Start: 20 * time.Second, End: 20 * time.Second}},
		DurationMS: 120000, Violations: []check.Violation{}}
	var rv uint64
	next := func() uint64 { rv++; return rv }
	for i := 0; i < n; i++ {
		created := time.Duration(rng.IntN(60000)) * time.Millisecond
		rec := record.NodeRecord{Name: fmt.Sprintf("burst-5000-n%d", i), UID: fmt.Sprint(i), Gated: true,
			Created: record.Mark{RV: next(), Time: at(created)}, CreatedAt: at(created), TaintedAtCreate: true}
		rec.Tainted = rec.Created
		ready := created + time.Second + time.Duration(rng.IntN(2000))*time.Millisecond
		stuck := i%1700 == 3
		if i != 3 {
			rec.Bindings = append(rec.Bindings, record.Binding{Pod: "ns/init-" + fmt.Sprint(i), Init: true, Tolerates: true,
				Mark: record.Mark{RV: next(), Time: at(created + 500*time.Millisecond)}})
		}
		if !stuck {
			rec.InitReady = record.Mark{RV: next(), Time: at(ready)}
			rec.ReadyAccepted = []time.Time{at(ready)}
			lat := time.Duration(rng.ExpFloat64()*150) * time.Millisecond
			if ready > 38*time.Second && ready < 46*time.Second {
				lat += 46*time.Second - ready
			}
			rec.Released = record.Mark{RV: next(), Time: at(ready + lat)}
			res.Released++
			res.ReleaseLatency = append(res.ReleaseLatency, lat)
		} else {
			res.Stuck++
		}
		for p := 0; p < 2; p++ {
			b := record.Binding{Pod: fmt.Sprintf("ns/w-%d-%d", i, p), Mark: record.Mark{RV: next(), Time: at(ready + 2*time.Second + time.Duration(p)*time.Second)}}
			if stuck && p == 0 && i != 3 {
				res.Violations = append(res.Violations, check.Violation{Kind: check.KindEarlyPod, Node: rec.Name, Pod: b.Pod,
					Detail: fmt.Sprintf("bound at rv %d; node never released", b.Mark.RV), AtMS: b.Mark.Time.Sub(start).Milliseconds(), RV: b.Mark.RV})
			}
			rec.Bindings = append(rec.Bindings, b)
			res.WorkloadPods++
		}
		res.Records = append(res.Records, rec)
	}
	lat := make([]time.Duration, len(res.ReleaseLatency))
	copy(lat, res.ReleaseLatency)
	res.ReleaseLatencyMS = check.PercentilesOf(lat)
	res.Failures = []string{"expected no violations, found 2 (early-pod)", "3 gated nodes never released, expected 0"}
	res.Reproduce = "go run ./cmd/simulate run --seed 1 scenarios/burst-5000.yaml"
	return res
}

// TestHTMLLarge renders a 5000-node run and checks what can be checked of the page: its
// size, that every SVG in it is well-formed XML, that the fault windows are drawn, that
// the rows are folded with the nodes that went wrong first, and that a scenario with no
// release shows "–". Where chromium is installed, it also loads the page headless and fails
// on any console message (an SVG attribute Chromium rejects is reported there; the page has
// no script, so it has nothing else to say).
func TestHTMLLarge(t *testing.T) {
	rep := synthetic()
	rep.Scenarios = append(rep.Scenarios, large(5000))
	var buf bytes.Buffer
	if err := rep.renderHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	t.Logf("page of %d scenarios, one of 5000 nodes: %d bytes", len(rep.Scenarios), len(page))
	if len(page) > 5<<20 {
		t.Errorf("page is %d bytes; want under 5 MiB", len(page))
	}

	svgs := 0
	for rest := page; ; {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatalf("an <svg> is not closed")
		}
		if err := wellFormed(rest[i : i+j+len("</svg>")]); err != nil {
			t.Errorf("svg %d is not well-formed XML: %v", svgs, err)
		}
		svgs++
		rest = rest[i+j:]
	}
	if want := len(rep.Scenarios) + 2; svgs != want {
		t.Errorf("%d svg elements; want %d: an overview per scenario, and the CDF and the rows of the one with nodes", svgs, want)
	}

	big := page[strings.Index(page, fmt.Sprintf(`id="s%d-burst-5000"`, len(rep.Scenarios)-1)):]
	for _, want := range []string{
		`class="band"`, `>apiserver down</text>`, `class="instant"`, `>2 bypass Pods</text>`, // the fault windows
		`<details><summary>5000 nodes`,                               // folded
		`burst-5000-n1703</td><td>never released: init Pod bound at`, // stuck, with its reason
		`burst-5000-n3</td><td>never released: its init Pod was never bound`,
		`class="epods"`, `class="cdf released"`,
	} {
		if !strings.Contains(big, want) {
			t.Errorf("the 5000-node section has no %q", want)
		}
	}
	rows := big[strings.Index(big, `<svg xmlns="http://www.w3.org/2000/svg" width="904"`):]
	first := rows[strings.Index(rows, "<title>")+len("<title>"):]
	if !strings.HasPrefix(first, "burst-5000-n3:") {
		t.Errorf("first row is %.60q; want a node that went wrong (n3)", first)
	}
	keep := page[strings.Index(page, `id="s1-init-never-ready-timeout-keep"`):strings.Index(page, `id="s2-`)]
	if !strings.Contains(keep, "release latency p50 –, p99 –") || strings.Contains(page, "<td>0 ms</td>") {
		t.Errorf("a run with no release does not show its latency as –")
	}

	loadInChromium(t, page)
}

// wellFormed decodes an SVG element as XML to its end.
func wellFormed(s string) error {
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = true
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// loadInChromium loads page in headless Chromium, if it is installed, and fails on any
// console message or if the page did not load.
func loadInChromium(t *testing.T, page string) {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Log("chromium is not installed: checked the page's static properties only (size, well-formed SVG, fault bands, rows), not how a browser renders it")
		return
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s could not load the page: %v\n%s", bin, err, tail(stderr.String()))
	}
	if !strings.Contains(stdout.String(), "burst-5000-n3") {
		t.Fatalf("%s did not render the page (its DOM has no rows)\n%s", bin, tail(stderr.String()))
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	if len(console) > 0 {
		t.Errorf("%s reported %d console messages loading the page, first: %s", bin, len(console), console[0])
	}
	t.Logf("%s loaded the page headless with no console message", bin)
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

func TestMSLabel(t *testing.T) {
	for v, want := range map[float64]string{0: "0 ms", 0.44: "0.4 ms", 1: "1 ms", 25.4: "25 ms", 250: "250 ms", 1000: "1 s",
		2874.793: "2.87 s", 3232.79399: "3.23 s", 45200: "45.2 s", 454600: "455 s"} {
		if got := msLabel(v); got != want {
			t.Errorf("msLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestBoundAt: a Pod bound after the release by resourceVersion is never drawn before it,
// whichever watch delivered its event first; an early Pod keeps its own time.
func TestBoundAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := &record.NodeRecord{Released: record.Mark{RV: 10, Time: t0.Add(2 * time.Second)}}
	for _, c := range []struct {
		b    record.Binding
		want time.Time
	}{
		{record.Binding{Mark: record.Mark{RV: 11, Time: t0.Add(time.Second)}}, t0.Add(2 * time.Second)}, // event arrived first
		{record.Binding{Mark: record.Mark{RV: 12, Time: t0.Add(3 * time.Second)}}, t0.Add(3 * time.Second)},
		{record.Binding{Mark: record.Mark{RV: 9, Time: t0.Add(time.Second)}}, t0.Add(time.Second)}, // early
	} {
		if got := boundAt(rec, c.b); !got.Equal(c.want) {
			t.Errorf("boundAt(rv %d at %s) = %s, want %s", c.b.Mark.RV, c.b.Mark.Time.Sub(t0), got.Sub(t0), c.want.Sub(t0))
		}
	}
}

// TestHTMLExpectedEarlyPods: early Pods in a run that passed are the ones its scenario
// expects (backfill-busy-node-untouched's busy nodes), shown grey as expected; in a run that
// failed they stay red.
func TestHTMLExpectedEarlyPods(t *testing.T) {
	early := func(n int) []check.Violation {
		var vs []check.Violation
		for i := range n {
			vs = append(vs, check.Violation{Kind: check.KindEarlyPod, Node: fmt.Sprint("n", i), Pod: fmt.Sprint("ns/w-", i)})
		}
		return vs
	}
	r := &Report{Backend: "embedded", Gate: "in-process", Seed: 1, Scenarios: []*Result{
		{Name: "expects-them", Passed: true, Nodes: 20, WorkloadPods: 10, Violations: early(10)},
		{Name: "fails-on-them", Nodes: 10, WorkloadPods: 10, Violations: early(2)},
		{Name: "none", Passed: true, Nodes: 10, WorkloadPods: 10, Violations: []check.Violation{}},
	}}
	var buf bytes.Buffer
	if err := r.renderHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<td class="muted">10 (expected)</td>`,
		`<td class="fail">2</td>`,
		`<td>0</td>`,
		`10 workload Pods, 10 early (expected) ·`,
		`10 workload Pods, 2 early ·`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, `class="fail">10`) {
		t.Error("the passing run's expected early Pods are shown as a failure")
	}
}

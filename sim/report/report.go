package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Result is one scenario run, as reported.
type Result struct {
	Name             string            `json:"name"`
	File             string            `json:"file"`
	Description      string            `json:"description"`
	Gate             string            `json:"gate"`
	Seed             uint64            `json:"seed"`
	Passed           bool              `json:"passed"`
	Nodes            int               `json:"nodes"`
	WorkloadPods     int               `json:"workload_pods"`
	Violations       []check.Violation `json:"violations"`
	Released         int               `json:"released"`
	Stuck            int               `json:"stuck"`
	Counters         scenario.Counters `json:"counters"`
	WatchCuts        int               `json:"watch_cuts,omitempty"`
	ReleaseLatencyMS check.Percentiles `json:"release_latency_ms"`
	HoldMS           HoldPercentiles   `json:"hold_ms"`
	// RetaintLatencyMS: a continuous rule's requirement failing on a released node to its
	// taint back (nil: no re-taint). BoundWhileUnready: workload Pods bound in such windows.
	RetaintLatencyMS  *check.Percentiles `json:"retaint_latency_ms,omitempty"`
	BoundWhileUnready int                `json:"bound_while_unready,omitempty"`
	// ReplacementMS: for each StatefulSet Pod of a node whose kubelet stopped, the time from
	// the stop to the Pod running on another node.
	ReplacementMS []int64 `json:"replacement_ms,omitempty"`
	// ReplaceReleaseMS: for each node the gate replaced (timeoutPolicy replace) whose
	// replacement was released, the time from the replaced node's mark to that release.
	ReplaceReleaseMS []int64  `json:"replace_release_ms,omitempty"`
	DurationMS       int64    `json:"duration_ms"`
	Failures         []string `json:"failures,omitempty"`
	Errors           []string `json:"errors,omitempty"`
	Reproduce        string   `json:"reproduce,omitempty"`
	Notes            []string `json:"notes,omitempty"`

	// Records and Start are the run's raw material, for the timeline picture and the
	// benchmark; they are not part of the JSON report. ReleaseLatency are the checker's
	// samples (init ready to released), for the latency CDF; FaultWindows are the
	// scenario's faults, for the shaded bands.
	Records        []record.NodeRecord `json:"-"`
	Start          time.Time           `json:"-"`
	ReleaseLatency []time.Duration     `json:"-"`
	FaultWindows   []scenario.Window   `json:"-"`
}

// HasLatency reports whether the run measured any release latency. A run with no release
// (a timeout that keeps its nodes), or only releases without readiness (a timeout that
// releases), has none, and its percentiles are shown as "–", never as 0 ms.
func (r *Result) HasLatency() bool {
	return len(r.ReleaseLatency) > 0 || r.ReleaseLatencyMS != (check.Percentiles{})
}

// noLatency stands for a latency that does not exist.
const noLatency = "–"

// ms formats a latency in whole milliseconds, or "–" when the run measured none.
func (r *Result) ms(v float64) string {
	if !r.HasLatency() {
		return noLatency
	}
	return fmt.Sprintf("%.0fms", v)
}

// HoldPercentiles are node hold times (creation to release) in ms.
type HoldPercentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Report is a whole run: every scenario, every repetition.
type Report struct {
	Backend   string    `json:"backend"`
	Gate      string    `json:"gate"`
	Seed      uint64    `json:"seed"`
	Scenarios []*Result `json:"scenarios"`
}

// Passed reports whether every scenario met its expectations.
func (r *Report) Passed() bool {
	for _, s := range r.Scenarios {
		if !s.Passed {
			return false
		}
	}
	return len(r.Scenarios) > 0
}

// WriteText prints the summary table and, for failures, why and how to reproduce.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\n%-36s %-6s %6s %6s %6s %8s %6s %9s %9s %8s\n", "SCENARIO", "RESULT", "NODES", "PODS", "EARLY", "RELEASED", "STUCK", "REL p50", "REL p99", "WALL")
	for _, s := range r.Scenarios {
		result := "pass"
		if !s.Passed {
			result = "FAIL"
		}
		early := check.Count(s.Violations, check.KindEarlyPod)
		fmt.Fprintf(w, "%-36s %-6s %6d %6d %6d %8d %6d %9s %9s %7.1fs\n", s.Name, result, s.Nodes, s.WorkloadPods,
			early, s.Released, s.Stuck, s.ms(s.ReleaseLatencyMS.P50), s.ms(s.ReleaseLatencyMS.P99), float64(s.DurationMS)/1000)
	}
	r.WriteFailures(w)
}

// WriteFailures prints, for every run that failed, why and the command that reproduces it.
func (r *Report) WriteFailures(w io.Writer) {
	for _, s := range r.Scenarios {
		if s.Passed {
			continue
		}
		fmt.Fprintf(w, "\n%s (seed %d) failed:\n", s.Name, s.Seed)
		for _, f := range s.Failures {
			fmt.Fprintf(w, "  - %s\n", f)
		}
		for i, v := range s.Violations {
			if i == 5 {
				fmt.Fprintf(w, "  ... and %d more violations\n", len(s.Violations)-5)
				break
			}
			fmt.Fprintf(w, "  %s node=%s pod=%s %s\n", v.Kind, v.Node, v.Pod, v.Detail)
		}
		fmt.Fprintf(w, "  reproduce: %s\n", s.Reproduce)
	}
}

// WriteSummary prints one line per scenario over every repetition: how many runs passed,
// the early Pods, lost foreign taints and stuck nodes summed over them, the worst p99
// release latency, and for continuous rules the worst p99 window: a requirement failing on
// a released node to its taint back, when new Pods may still be bound there (the Pod guard
// is what covers it). It is the table `make soak` ends with.
func (r *Report) WriteSummary(w io.Writer) {
	byName := map[string]*soakRow{}
	var names []string
	var total soakRow
	for _, s := range r.Scenarios {
		a := byName[s.Name]
		if a == nil {
			a = &soakRow{}
			byName[s.Name] = a
			names = append(names, s.Name)
		}
		a.add(s)
		total.add(s)
	}
	fmt.Fprintf(w, "\n%-36s %5s %6s %11s %12s %11s %13s %16s\n", "SCENARIO", "RUNS", "PASSES", "EARLY PODS", "TAINTS LOST", "STUCK NODES", "MAX p99 (ms)", "MAX WINDOW (ms)")
	for _, n := range names {
		a := byName[n]
		fmt.Fprintf(w, "%-36s %5d %6d %11d %12d %11d %13s %16s\n", n, a.runs, a.passes, a.early, a.lost, a.stuck,
			orDash(a.measured, a.p99), orDash(a.windowed, a.window))
	}
	fmt.Fprintf(w, "%-36s %5d %6d %11d %12d %11d\n", "TOTAL", total.runs, total.passes, total.early, total.lost, total.stuck)
}

// soakRow is one line of the soak summary: a scenario's runs, or all of them.
type soakRow struct {
	runs, passes, early, lost, stuck int
	p99, window                      float64
	measured, windowed               bool
}

// add counts one run into the row.
func (a *soakRow) add(s *Result) {
	a.runs++
	if s.Passed {
		a.passes++
	}
	for _, v := range s.Violations {
		switch v.Kind {
		case check.KindEarlyPod:
			a.early++
		case check.KindForeignTaintLost:
			a.lost++
		}
	}
	a.stuck += s.Stuck
	if s.HasLatency() {
		a.measured = true
		a.p99 = max(a.p99, s.ReleaseLatencyMS.P99)
	}
	if s.RetaintLatencyMS != nil {
		a.windowed = true
		a.window = max(a.window, s.RetaintLatencyMS.P99)
	}
}

// orDash formats a millisecond figure, or "–" when there was none to measure.
func orDash(measured bool, ms float64) string {
	if !measured {
		return noLatency
	}
	return fmt.Sprintf("%.0f", ms)
}

// WriteJSON writes the machine-readable report.
func (r *Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(data, '\n'))
}

// WriteJUnit writes one testcase per scenario run.
func (r *Report) WriteJUnit(path string) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      float64  `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		SystemOut string   `xml:"system-out"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := suite{Name: "startupgate-scenarios", Tests: len(r.Scenarios)}
	for _, res := range r.Scenarios {
		tc := testcase{Name: fmt.Sprintf("%s/seed=%d", res.Name, res.Seed), Classname: "scenarios." + res.Gate, Time: float64(res.DurationMS) / 1000,
			SystemOut: res.summary()}
		if !res.Passed {
			s.Failures++
			tc.Failure = &failure{Message: strings.Join(res.Failures, "; "), Text: res.Reproduce}
		}
		s.Cases = append(s.Cases, tc)
	}
	data, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append([]byte(xml.Header), append(data, '\n')...))
}

// summary is one line of what the run showed, for JUnit's system-out.
func (r *Result) summary() string {
	return fmt.Sprintf("%d nodes, %d released, %d stuck, %d early pods, %d workload pods; release latency p50 %s, p99 %s",
		r.Nodes, r.Released, r.Stuck, check.Count(r.Violations, check.KindEarlyPod), r.WorkloadPods,
		r.ms(r.ReleaseLatencyMS.P50), r.ms(r.ReleaseLatencyMS.P99))
}

// WriteFile writes data to path, creating its directory first.
func WriteFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, data, 0o644)
}

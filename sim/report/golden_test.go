package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/startupgate/startupgate/internal/golden"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// synthetic is a fixed report: a pass, a negative control that failed its expect with
// more violations than the text shows, a run with no release at all (timeout policy keep),
// a continuous rule's run with its re-taint window, and a second repetition of the first, for
// the soak summary.
func synthetic() *Report {
	early := func(node string) check.Violation {
		return check.Violation{Kind: check.KindEarlyPod, Node: node, Pod: "ns/w-" + node, Detail: "bound at rv 12; node never released"}
	}
	var many []check.Violation
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6"} {
		many = append(many, early("basic-join-"+n))
	}
	many = append(many, check.Violation{Kind: check.KindForeignTaintLost, Node: "basic-join-n1", Detail: "lost taint x:NoSchedule"})
	pass := &Result{Name: "basic-join", File: "scenarios/basic-join.yaml", Gate: "in-process", Seed: 1, Passed: true,
		Nodes: 10, WorkloadPods: 30, Released: 10, Violations: []check.Violation{},
		ReleaseLatencyMS: check.Percentiles{P50: 25, P90: 40, P99: 70, Max: 71}, HoldMS: HoldPercentiles{P50: 1200, P99: 1500}, DurationMS: 1875}
	failed := &Result{Name: "basic-join", File: "scenarios/basic-join.yaml", Gate: "off", Seed: 2,
		Nodes: 10, WorkloadPods: 30, Violations: many, Stuck: 0,
		Counters: scenario.Counters{EarlyToleratingPods: 3}, DurationMS: 2400,
		Failures:  []string{"expected no violations, found 8 (early-pod,foreign-taint-lost)"},
		Reproduce: "go run ./cmd/simulate run --gate off --seed 2 scenarios/basic-join.yaml"}
	keep := &Result{Name: "init-never-ready-timeout-keep", File: "scenarios/init-never-ready-timeout-keep.yaml", Gate: "in-process", Seed: 1,
		Passed: true, Nodes: 10, Stuck: 10, Violations: []check.Violation{}, DurationMS: 12000}
	continuous := &Result{Name: "continuous-cni-unready", File: "scenarios/continuous-cni-unready.yaml", Gate: "in-process", Seed: 1,
		Passed: true, Nodes: 10, WorkloadPods: 40, Released: 10, Violations: []check.Violation{},
		ReleaseLatencyMS: check.Percentiles{P50: 30, P90: 45, P99: 60, Max: 61}, RetaintLatencyMS: &check.Percentiles{P50: 2100, P90: 2300, P99: 2450, Max: 2460},
		BoundWhileUnready: 0, DurationMS: 14000}
	return &Report{Backend: "embedded", Gate: "in-process", Seed: 1, Scenarios: []*Result{pass, keep, continuous, failed}}
}

func TestGoldenText(t *testing.T) {
	var buf bytes.Buffer
	synthetic().WriteText(&buf)
	golden.Compare(t, "report/suite.output.txt", buf.Bytes())
}

func TestGoldenSummary(t *testing.T) {
	var buf bytes.Buffer
	synthetic().WriteSummary(&buf)
	golden.Compare(t, "report/soak-summary.output.txt", buf.Bytes())
}

func TestGoldenJUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := synthetic().WriteJUnit(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "report/suite.output.xml", got)
}

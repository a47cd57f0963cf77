package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestLateFailuresAreKept: a failure found after the run was judged (its cleanup timed out,
// its gate did not stop cleanly) fails the run, or joins its error; it is never dropped.
func TestLateFailuresAreKept(t *testing.T) {
	rn := &run{Runner: &Runner{Opts: Options{Gate: "process"}}, sc: &scenario.Scenario{File: "scenarios/x.yaml"}, seed: 7}
	res, err := rn.late(&report.Result{Passed: true}, nil, "cleanup", errors.New("context deadline exceeded"))
	if err != nil || res.Passed || len(res.Failures) != 1 || !strings.Contains(res.Failures[0], "cleanup: context deadline exceeded") ||
		res.Reproduce != "go run ./cmd/simulate run --gate process --seed 7 scenarios/x.yaml" {
		t.Errorf("late failure on a passed run: %+v, %v", res, err)
	}
	if res, err := rn.late(nil, errors.New("plane down"), "stopping the gate", errors.New("replica 1: exit 2")); res != nil ||
		err == nil || !strings.Contains(err.Error(), "plane down") || !strings.Contains(err.Error(), "stopping the gate: replica 1: exit 2") {
		t.Errorf("late failure without a result: %v, %v", res, err)
	}
	ok := &report.Result{Passed: true}
	if res, err := rn.late(ok, nil, "cleanup", nil); res != ok || !res.Passed || err != nil {
		t.Errorf("no late failure changed the run: %+v, %v", res, err)
	}
}

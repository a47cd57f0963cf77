package sim

import (
	"context"
	"strings"
	"testing"
)

// TestScenarios runs the whole scenario suite with the gate in-process: each must meet its
// own expect. This is the race-condition regression suite CI runs.
func TestScenarios(t *testing.T) {
	rc := sharedPlane(t)
	scs, err := LoadAll([]string{"../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{Gate: GateInProcess, Plane: plane})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			res, err := r.Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			assertPassed(t, res)
		})
	}
}

// TestNegativeControls: without a gate, every scenario with pending workloads must be
// caught with early Pods. A checker that cannot fail proves nothing.
func TestNegativeControls(t *testing.T) {
	rc := sharedPlane(t)
	r, err := NewRunner(rc, Options{Gate: GateOff})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"../scenarios/basic-join.yaml", "../scenarios/autoscale-burst.yaml"} {
		sc, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(sc.Name, func(t *testing.T) {
			res, err := r.Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed {
				t.Fatalf("%s passed with --gate off; the checker missed the early Pods", sc.Name)
			}
			early := 0
			for _, v := range res.Violations {
				if v.Kind == KindEarlyPod {
					early++
				}
			}
			if early == 0 {
				t.Fatalf("%s with --gate off: no early-pod violation, got %+v", sc.Name, res.Failures)
			}
			if !strings.Contains(res.Reproduce, "--gate off") {
				t.Errorf("reproduce line %q does not name the gate mode", res.Reproduce)
			}
			t.Logf("%s --gate off: %d early pods of %d workload pods", sc.Name, early, res.WorkloadPods)
		})
	}
}

// TestPolicyMode runs the burst with the MutatingAdmissionPolicy instead of the webhook.
func TestPolicyMode(t *testing.T) {
	rc := sharedPlane(t)
	sc, err := Load("../scenarios/basic-join.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{Gate: GatePolicy})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	assertPassed(t, res)
}

// TestKubeconfigBackend points the kubeconfig backend at the running embedded plane.
func TestKubeconfigBackend(t *testing.T) {
	sharedPlane(t)
	kb := &Kubeconfig{Path: plane.Kubeconfig()}
	rc, err := kb.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kb.Stop() })
	sc, err := Load("../scenarios/basic-join.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{Gate: GateInProcess})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	assertPassed(t, res)
}

// TestKindBackend needs a container engine; the CI machines have none.
func TestKindBackend(t *testing.T) {
	if err := KindAvailable(); err != nil {
		t.Skipf("kind backend not runnable here: %v", err)
	}
	k := &Kind{ClusterName: "startupgate-test"}
	t.Cleanup(func() { _ = k.Stop() })
	if _, err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func assertPassed(t *testing.T, res *Result) {
	t.Helper()
	if !res.Passed {
		for _, v := range res.Violations {
			t.Logf("violation: %s node=%s pod=%s %s", v.Kind, v.Node, v.Pod, v.Detail)
		}
		t.Fatalf("%s failed: %v\nreproduce: %s", res.Name, res.Failures, res.Reproduce)
	}
	t.Logf("%s: %d nodes released, release latency p50 %.0fms p99 %.0fms, wall %dms",
		res.Name, res.Released, res.ReleaseLatencyMS.P50, res.ReleaseLatencyMS.P99, res.DurationMS)
}

package bench

import (
	"context"
	"strings"
	"testing"
)

// TestBenchSmall runs the whole benchmark — its own plane with an audit log, every mode,
// the memory phase — at a small size. Its figures are not judged here (timing is never
// asserted on these machines); what is asserted is what the benchmark measures that is not
// timing, so that `make bench` cannot rot into reporting zeros:
//   - the gate writes each released node exactly once (counted by the apiserver's audit log);
//   - so does the floor, which proves the count itself;
//   - no workload Pod lands early under the gate, and every mode releases every node;
//   - the apiserver timed every webhook call and the policy, the gate timed its handler, and
//     the gate's heap was read twice.
func TestBenchSmall(t *testing.T) {
	const nodes = 10
	rep, err := Run(context.Background(), Options{Sizes: []int{nodes}, Pods: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.WritesPerRelease != 1 || rep.FloorWritesPerRelease != 1 {
		t.Errorf("writes per release: gate %v, floor %v; want exactly 1 each (runs: %+v)", rep.WritesPerRelease, rep.FloorWritesPerRelease, rep.Runs)
	}
	if rep.GateEarlyPods != 0 {
		t.Errorf("%d workload Pods landed early under the gate", rep.GateEarlyPods)
	}
	modes := map[string]bool{}
	for _, run := range rep.Runs {
		modes[run.Mode] = true
		if run.Mode != benchReactive && (run.Released != nodes || !run.Passed) {
			t.Errorf("%s: released %d/%d, passed %v: %v", run.Name, run.Released, nodes, run.Passed, run.Failures)
		}
	}
	if len(modes) != 4 {
		t.Errorf("modes run: %v, want gate, floor, gate-policy and reactive", modes)
	}
	adm := rep.AdmissionMS
	if adm.Webhook.Count < nodes || adm.Policy.Count < nodes || adm.GateHandler.Count < nodes {
		t.Errorf("admission calls timed: webhook %d (gate's own count %d), policy %d; want at least %d each",
			adm.Webhook.Count, adm.GateHandler.Count, adm.Policy.Count, nodes)
	}
	if rep.GateHeapBytes.Pods0 == 0 || rep.GateHeapBytes.Pods100k == 0 || rep.FillerPods != 300 || rep.MemoryNodes != nodes {
		t.Errorf("memory phase: %+v heap, %d filler pods at %d nodes", rep.GateHeapBytes, rep.FillerPods, rep.MemoryNodes)
	}
	if md := rep.String(); !strings.Contains(md, "| exactly 1 Node write per release | 1.00") {
		t.Errorf("bench.md does not report the write count:\n%s", md)
	}
}

package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// smallNodes is the burst size TestBenchSmall runs at.
const smallNodes = 10

// TestBenchSmall runs the whole benchmark — its own plane with an audit log, every phase,
// the memory phase — at a small size. Its figures are not judged here (timing is never
// asserted on these machines); what is asserted is what the benchmark measures that is not
// timing, so that `make bench` cannot rot into reporting zeros:
//   - the gate writes each released node exactly once (counted by the apiserver's audit log);
//   - so does the floor, which proves the count itself;
//   - no workload Pod lands early under the gate, every mode releases every node, and no
//     run names a stuck node;
//   - the pairs ran alternately and each has a ratio; the paced rate, the zero-jitter pair
//     and the breakdowns produced their fields, every per-release stage once per release;
//   - the apiserver timed every webhook call and the policy, the gate timed its handler, the
//     gate's heap was read twice, and both processes' CPU time was read;
//   - the audit log counted, by user agent, requests from the fake kubelet, the recorder,
//     the scheduler, the controller-manager and the gate or floor.
//
// The binding-burst phase is left out: its four guard modes at even a tiny size would add
// about a minute; its pure parts are tested on their own (burst_test.go).
func TestBenchSmall(t *testing.T) {
	rep, err := Run(context.Background(), Options{Sizes: []int{smallNodes}, Pods: 300, Seed: 1,
		Pairs: 2, Rates: []int{5}, PacedFor: 2 * time.Second, ZeroJitter: smallNodes, Skip: map[string]bool{PhaseBindingBurst: true}})
	if err != nil {
		t.Fatal(err)
	}
	checkRuns(t, rep)
	checkComparisons(t, rep)
	checkBreakdowns(t, rep)
	checkCosts(t, rep)
	checkRequestsAndCPU(t, rep)
	checkMarkdown(t, rep)
}

// checkRuns: every run released every node with one write each and no early Pod, and the
// burst's runs came in the order the benchmark promises.
func checkRuns(t *testing.T, rep *Report) {
	t.Helper()
	if rep.WritesPerRelease != 1 || rep.FloorWritesPerRelease != 1 {
		t.Errorf("writes per release: gate %v, floor %v; want exactly 1 each (runs: %+v)", rep.WritesPerRelease, rep.FloorWritesPerRelease, rep.Runs)
	}
	if rep.GateEarlyPods != 0 {
		t.Errorf("%d workload Pods landed early under the gate", rep.GateEarlyPods)
	}
	modes := map[string]bool{}
	var order []string
	for _, run := range rep.Runs {
		modes[run.Mode] = true
		if rep.sizeRun(run, smallNodes) {
			order = append(order, run.Mode)
		}
		if run.Mode == benchReactive {
			continue
		}
		if run.Released != run.Nodes || run.Nodes == 0 || !run.Passed || len(run.Stuck) > 0 {
			t.Errorf("%s: released %d/%d, passed %v, stuck %v: %v", run.Name, run.Released, run.Nodes, run.Passed, run.Stuck, run.Failures)
		}
		// The checker times a release only when the moment it counts as ready is not after
		// it: a release seen before the fake kubelet noted its accepted write goes untimed.
		if len(run.ReleaseMS) == 0 || len(run.ReleaseMS) > run.Released || run.CPUS <= 0 {
			t.Errorf("%s: %d release latencies for %d releases, cpu %v s", run.Name, len(run.ReleaseMS), run.Released, run.CPUS)
		}
	}
	if len(modes) != 4 {
		t.Errorf("modes run: %v, want gate, floor, gate-policy and reactive", modes)
	}
	// The burst's runs: the pairs, alternating, then the reactive peer and the webhook gate.
	if got := strings.Join(order, ","); got != "gate-policy,floor,gate-policy,floor,reactive,gate" {
		t.Errorf("the burst's runs were %s; want the pairs alternating, then reactive, then the webhook gate", got)
	}
}

// checkComparisons: the workers comparison, the pairs, the zero-jitter pair and the paced
// rate each produced a ratio or both latencies.
func checkComparisons(t *testing.T, rep *Report) {
	t.Helper()
	if len(rep.Workers) != 2 || rep.Workers[0].Workers != 16 || rep.Workers[0].Ratio <= 0 || rep.Workers[1].Ratio <= 0 {
		t.Errorf("workers comparison: %+v; want a 16-worker gate run beside the zero-jitter and the reference bursts", rep.Workers)
	}
	if ps := rep.Pairs["10"]; len(ps) != 2 || ps[0].Ratio <= 0 || ps[1].Ratio <= 0 || rep.PairRatio["10"].N != 2 {
		t.Errorf("pairs at 10 nodes: %+v, summary %+v; want 2 complete pairs", ps, rep.PairRatio["10"])
	}
	if zs := rep.Pairs["zero-jitter-10"]; len(zs) != 1 || zs[0].Ratio <= 0 {
		t.Errorf("zero-jitter pair: %+v", zs)
	}
	if len(rep.Paced) != 1 || rep.Paced[0].Rate != 5 || rep.Paced[0].Nodes != 10 || !rep.Paced[0].Complete ||
		rep.Paced[0].Gate.Max <= 0 || rep.Paced[0].Floor.Max <= 0 {
		t.Errorf("paced: %+v; want one complete rate of 5/s, 10 nodes, with both latencies", rep.Paced)
	}
}

// checkBreakdowns: each breakdown has every stage, every per-release stage once per release.
func checkBreakdowns(t *testing.T, rep *Report) {
	t.Helper()
	if len(rep.BreakdownMS) != 5 {
		t.Errorf("breakdowns: %d, want 5 (the webhook burst, the first pair's gate and floor, the zero-jitter gate and floor)", len(rep.BreakdownMS))
	}
	for label, bd := range rep.BreakdownMS {
		gate := !strings.Contains(bd.Run, "floor")
		want := 5
		if gate {
			want += len(gateStageMetrics)
		}
		if len(bd.Stages) != want {
			t.Errorf("%s: %d stages, want %d", label, len(bd.Stages), want)
		}
		for _, s := range bd.Stages {
			switch {
			case s.PerRelease && s.Count != smallNodes:
				t.Errorf("%s: stage %q has %d observations, want one per release (%d)", label, s.Name, s.Count, smallNodes)
			case !s.PerRelease && !strings.Contains(s.Name, "events") && s.Count < smallNodes:
				t.Errorf("%s: gate stage %q has %d observations, want at least %d", label, s.Name, s.Count, smallNodes)
			}
		}
	}
}

// checkCosts: CPU per release, the machine, the admission timings and the memory phase were
// all read.
func checkCosts(t *testing.T, rep *Report) {
	t.Helper()
	if c := rep.CPUPer1000; c.Gate <= 0 || c.Floor <= 0 || c.Ratio <= 0 {
		t.Errorf("CPU per 1000 releases: %+v", c)
	}
	if m := rep.Machine; m.CPUs < 1 || m.Model == "" || m.Commit == "" {
		t.Errorf("machine: %+v", m)
	}
	adm := rep.AdmissionMS
	if adm.Webhook.Count < smallNodes || adm.Policy.Count < smallNodes || adm.GateHandler.Count < smallNodes {
		t.Errorf("admission calls timed: webhook %d (gate's own count %d), policy %d; want at least %d each",
			adm.Webhook.Count, adm.GateHandler.Count, adm.Policy.Count, smallNodes)
	}
	if rep.GateHeapBytes.Pods0 == 0 || rep.GateHeapBytes.Pods100k == 0 || rep.FillerPods != 300 || rep.MemoryNodes != smallNodes {
		t.Errorf("memory phase: %+v heap, %d filler pods at %d nodes", rep.GateHeapBytes, rep.FillerPods, rep.MemoryNodes)
	}
}

// checkRequestsAndCPU: the audit log counted every component's requests, and every
// process's CPU time was read, for the runs that report them.
func checkRequestsAndCPU(t *testing.T, rep *Report) {
	t.Helper()
	// The requests per node by component: every run of the burst's first pair and its
	// webhook gate, each with the parts every run has, and the writer of the releases.
	if len(rep.RequestsPerNode) != 3 {
		t.Errorf("requests per node for %d runs, want 3 (the first pair and the webhook gate): %v", len(rep.RequestsPerNode), rep.RequestsPerNode)
	}
	for run, pn := range rep.RequestsPerNode {
		writer := compGate
		if strings.Contains(run, "floor") {
			writer = compFloor
		}
		for _, c := range []string{compKubelet, compRecorder, compScheduler, compKCM, writer} {
			if pn[c] <= 0 {
				t.Errorf("%s: no requests from %s counted: %v", run, c, pn)
			}
		}
	}
	// The CPU of every process, for the same runs: the plane's, the simulator's, the gate's.
	for _, run := range rep.Runs {
		if _, ok := rep.RequestsPerNode[run.Name]; !ok {
			continue
		}
		for _, p := range []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", simulatorProcess, run.Mode} {
			if run.ProcessCPUS[p] <= 0 {
				t.Errorf("%s: no CPU read for %s: %v", run.Name, p, run.ProcessCPUS)
			}
		}
		if run.WindowS <= 0 {
			t.Errorf("%s: window %v s", run.Name, run.WindowS)
		}
	}
}

// checkMarkdown: bench.md shows the figures above.
func checkMarkdown(t *testing.T, rep *Report) {
	t.Helper()
	md := rep.String()
	for _, want := range []string{"| exactly 1 Node write per release (gate, every gate run) | 1.00", "| 5 × 2 | 10 |", "Release latency by stage",
		"| the simulator's own (fake kubelet, recorder, steps) |", "| all, over the run's wall time (s) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("bench.md has no %q:\n%s", want, md)
		}
	}
}

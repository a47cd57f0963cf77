package bench

import (
	"os"
	"sort"
	"strings"
	"time"

	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/controlplane"
)

// Components whose API requests a run counts, named by the user agent of their client. The
// fake kubelet, the recorder and the simulator's own steps are what the simulator adds; a
// real cluster has kubelets but no recorder.
const (
	compKubelet   = "kubelet (fake)"
	compRecorder  = "recorder"
	compSim       = "simulator (setup, steps, cleanup)"
	compScheduler = "scheduler"
	compKCM       = "controller-manager"
	compGate      = "gate"
	compFloor     = "floor"
	compAPIServer = "apiserver (loopback)"
	compOther     = "other"
)

// componentOf names the sender of a request by its user agent. The simulator's kubelet and
// recorder agents begin with its own, so they are matched first.
func componentOf(ua string) string {
	switch {
	case strings.HasPrefix(ua, sim.KubeletUserAgent):
		return compKubelet
	case strings.HasPrefix(ua, sim.RecorderUserAgent):
		return compRecorder
	case strings.HasPrefix(ua, sim.UserAgent):
		return compSim
	case strings.HasPrefix(ua, "kube-scheduler/"):
		return compScheduler
	case strings.HasPrefix(ua, "kube-controller-manager/"):
		return compKCM
	case isGateAgent(ua):
		return compGate
	case strings.HasPrefix(ua, "startupgate-floor"):
		return compFloor
	case strings.HasPrefix(ua, "kube-apiserver/"):
		return compAPIServer
	}
	return compOther
}

// isGateAgent: the user agent is the gate's. The in-process gate's client names itself
// startupgate-gate; the process gate keeps client-go's default, its binary's name first
// ("gate/v0.0.0 (linux/amd64) ..."), which a gate built under another name changes: a
// before binary named before-gate sends "before-gate/...".
func isGateAgent(ua string) bool {
	prog, _, _ := strings.Cut(ua, "/")
	return strings.HasPrefix(ua, "startupgate-gate") || prog == "gate" || strings.HasSuffix(prog, "-gate")
}

// request is one audited request: when the apiserver received it, and from whom.
type request struct {
	at   time.Time
	comp string
}

// requestsIn counts, by component, the requests received in [from, to].
func requestsIn(reqs []request, from, to time.Time) map[string]int {
	out := map[string]int{}
	for _, q := range reqs {
		if !q.at.Before(from) && !q.at.After(to) {
			out[q.comp]++
		}
	}
	return out
}

// perNode divides each component's count by the run's nodes.
func perNode(counts map[string]int, nodes int) map[string]float64 {
	if nodes == 0 || len(counts) == 0 {
		return nil
	}
	out := make(map[string]float64, len(counts))
	for c, n := range counts {
		out[c] = round2(float64(n) / float64(nodes))
	}
	return out
}

// componentOrder lists the components in a fixed order for the report: the simulator's
// parts first, then the plane's, then the gate's.
var componentOrder = []string{compKubelet, compRecorder, compSim, compScheduler, compKCM, compAPIServer, compGate, compFloor, compOther}

// componentsIn are the components any of the runs counted, in componentOrder.
func componentsIn(runs []RunResult) []string {
	seen := map[string]bool{}
	for _, r := range runs {
		for c := range r.Requests {
			seen[c] = true
		}
	}
	var out []string
	for _, c := range componentOrder {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	rest := make([]string, 0, len(seen))
	for c := range seen {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// requestsPerNode are the requests per node by component of the largest burst's first
// pair (gate and floor, on the policy) and of its webhook gate.
func requestsPerNode(runs []RunResult, largest int) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, mode := range []string{benchPolicy, benchFloor, benchGate} {
		name := benchName(mode, largest)
		for _, r := range runs {
			if r.Name == name && r.Requests != nil {
				out[name] = perNode(r.Requests, r.Nodes)
			}
		}
	}
	return out
}

// simulatorProcess names this process (the fake kubelet, the recorder, the checker and the
// benchmark itself) among the processes whose CPU a run reads.
const simulatorProcess = "simulator"

// benchProcesses are the pids, by name, of the processes whose cost a run reads: the
// plane's and this one.
func benchProcesses() map[string]int {
	pids := controlplane.PlaneProcesses()
	pids[simulatorProcess] = os.Getpid()
	return pids
}

// processesCPU reads the cumulative CPU seconds of the plane's processes and of this one.
func processesCPU() map[string]float64 {
	out := map[string]float64{}
	for name, pid := range benchProcesses() {
		if s, err := processCPU(pid); err == nil {
			out[name] = s
		}
	}
	return out
}

// cpuSpent is what each process spent between two readings; a process missing from either
// (restarted, or never read) is left out rather than counted from zero.
func cpuSpent(before, after map[string]float64) map[string]float64 {
	if len(after) == 0 {
		return nil
	}
	out := map[string]float64{}
	for name, a := range after {
		if b, ok := before[name]; ok && a >= b {
			out[name] = round2(a - b)
		}
	}
	return out
}

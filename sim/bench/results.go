package bench

import (
	"fmt"
	"time"

	"github.com/startupgate/startupgate/sim/check"
)

// Report is out/bench.json. A figure that was not measured is absent (null, or a zero
// count beside it), and reads "not measured" in bench.md; it meets no target.
type Report struct {
	Machine Machine `json:"machine"`
	// Reference is the burst size the targets are judged at (and admission and the reactive
	// peer are measured at).
	Reference int `json:"reference_nodes"`
	// Pairs are the gate/floor pairs per size, in the order they ran; PairRatio sums up
	// their p99 ratios.
	Pairs     map[string][]Pair       `json:"pairs"`
	PairRatio map[string]RatioSummary `json:"pair_ratio_p99"`
	// ReleaseLatencyMS is the webhook-admitted gate's run per size (a line of its own, not
	// paired: its admission loads the plane differently).
	ReleaseLatencyMS map[string]check.Percentiles `json:"release_latency_ms"`
	// Paced are the paced join rates, slowest first.
	Paced []Paced `json:"paced"`
	// BreakdownMS takes the gate's release latency apart, per run it was measured on
	// (the reference burst, the zero-jitter burst).
	BreakdownMS map[string]Breakdown `json:"breakdown_ms"`
	AdmissionMS struct {
		Webhook Quantiles `json:"webhook"`
		Policy  Quantiles `json:"policy"`
		// GateHandler is the gate's own timing of its webhook handler (the webhook's share).
		GateHandler Quantiles `json:"gate_handler"`
	} `json:"admission_ms"`
	// WritesPerRelease counts the gate's successful Node writes (audit log) per released
	// node, over every gate run; conflicts are the 409s among its attempts.
	WritesPerRelease      float64 `json:"writes_per_release"`
	WriteConflicts        int     `json:"write_conflicts"`
	FloorWritesPerRelease float64 `json:"floor_writes_per_release"`
	FloorWriteConflicts   int     `json:"floor_write_conflicts"`
	GateHeapBytes         struct {
		Pods0    uint64 `json:"pods_0"`
		Pods100k uint64 `json:"pods_100k"`
	} `json:"heap_bytes"`
	GateRSSBytes struct {
		Pods0    uint64 `json:"pods_0"`
		Pods100k uint64 `json:"pods_100k"`
	} `json:"rss_bytes"`
	GateHeapRatio float64 `json:"gate_heap_ratio"`
	// MemoryNodes and FillerPods say at what the memory figures were taken.
	MemoryNodes int `json:"memory_nodes"`
	FillerPods  int `json:"filler_pods"`
	// OwnLabels: the gate waited for components with their own labels (Options.OwnLabels).
	OwnLabels bool `json:"own_labels,omitempty"`
	// CPUPer1000 is each process's CPU time, from its start to the run settled, per 1000
	// released nodes, over the pairs at the reference size (start-up included for both).
	CPUPer1000 struct {
		Gate  float64 `json:"gate"`
		Floor float64 `json:"floor"`
		Ratio float64 `json:"ratio"`
	} `json:"cpu_s_per_1000"`
	// SimWallS is first join to last release of the webhook gate's run per size.
	SimWallS          map[string]float64 `json:"sim_wall_s"`
	PlaneStartS       float64            `json:"plane_start_s"`
	ReactiveEarlyPods int                `json:"reactive_early_pods"`
	GateEarlyPods     int                `json:"gate_early_pods"`
	// RequestsPerNode are the API requests per node by component (user agent, from the
	// audit log), for each run of the largest burst's first pair and its webhook gate:
	// what the simulator's fake kubelet and recorder cost the plane, beside the scheduler,
	// the controller-manager and the gate.
	RequestsPerNode map[string]map[string]float64 `json:"requests_per_node"`
	// Workers compares the gate's --workers settings with the shipped default, per burst.
	Workers []WorkersRun `json:"workers"`
	// Skipped names the phases this run left out; Only, the one phase it ran, if it ran one
	// alone.
	Skipped []string `json:"skipped,omitempty"`
	Only    string   `json:"only,omitempty"`
	// BindingBurst is the binding-burst phase: the Pod guard under thousands of bindings at
	// once (nil: not run).
	BindingBurst *BindingBurst `json:"binding_burst,omitempty"`
	Runs         []RunResult   `json:"runs"`
}

// Machine is where the benchmark ran, and what it ran.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"model"`
	OSArch string `json:"os_arch"`
	Go     string `json:"go"`
	Commit string `json:"commit"`
}

func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs (%s), %s, %s, commit %s", m.CPUs, m.Model, m.OSArch, m.Go, m.Commit)
}

// Pair is one gate run and the floor run after it, same size, same admission (the policy).
type Pair struct {
	Gate     string  `json:"gate_run"`
	Floor    string  `json:"floor_run"`
	GateP99  float64 `json:"gate_p99_ms"`
	FloorP99 float64 `json:"floor_p99_ms"`
	// Ratio is gate p99 / floor p99; 0 when either run did not release every node.
	Ratio float64 `json:"ratio"`
}

// WorkersRun is a gate run with --workers set, beside the shipped default's run on the same
// burst (the first pair's gate run, or the zero-jitter gate run).
type WorkersRun struct {
	Burst   string `json:"burst"`
	Workers int    `json:"workers"`
	Run     string `json:"run"`
	// P99 and WorkqueueP99 are this run's; the Shipped ones the default's. Ratio is
	// shipped p99 / this p99 (above 1: the shipped default is slower).
	P99             float64 `json:"p99_ms"`
	WorkqueueP99    float64 `json:"workqueue_p99_ms"`
	ShippedP99      float64 `json:"shipped_p99_ms"`
	ShippedQueueP99 float64 `json:"shipped_workqueue_p99_ms"`
	Ratio           float64 `json:"shipped_over_this_p99"`
}

// RatioSummary is the median and range of the pairs' ratios (complete pairs only).
type RatioSummary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Paced is one join rate: nodes join at Rate per second for Seconds.
type Paced struct {
	Rate    int               `json:"rate_per_s"`
	Seconds float64           `json:"seconds"`
	Nodes   int               `json:"nodes"`
	Gate    check.Percentiles `json:"gate_ms"`
	Floor   check.Percentiles `json:"floor_ms"`
	// Complete: both runs released every node.
	Complete bool `json:"complete"`
}

// Quantiles of a latency, in ms.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// Count is how many observations they come from; BucketMS names the histogram bucket
	// the p99 fell in (an apiserver histogram cannot resolve finer than its buckets).
	Count    uint64  `json:"count"`
	BucketMS float64 `json:"p99_bucket_le_ms"`
}

// RunResult is one scenario run of the benchmark.
type RunResult struct {
	Name      string            `json:"name"`
	Mode      string            `json:"mode"`
	Nodes     int               `json:"nodes"`
	Released  int               `json:"released"`
	EarlyPods int               `json:"early_pods"`
	Passed    bool              `json:"passed"`
	WallS     float64           `json:"wall_s"`
	LatencyMS check.Percentiles `json:"release_latency_ms"`
	Writes    int               `json:"node_writes"`
	Conflicts int               `json:"node_write_conflicts"`
	// CPUS is the gate's (or floor's) process CPU time at the run's end, with that of any
	// process of it that exited and was restarted.
	CPUS float64 `json:"cpu_s"`
	// Restarts counts the gate's (or floor's) process exiting on its own and being started
	// again, as a Deployment would (a lost lease ends the process). The stage breakdown of a
	// run with a restart covers only its last process, so it is left out.
	Restarts int      `json:"restarts"`
	Failures []string `json:"failures,omitempty"`
	// Stuck names every node never released (up to 100), with the checker's reason, whether
	// its init Pod was ever bound, and the taints the node carried at the end.
	Stuck []string `json:"stuck,omitempty"`
	// ReleaseMS are the run's release latencies, one per release, in ms.
	ReleaseMS []float64 `json:"release_ms,omitempty"`
	// Requests count the API requests the apiserver received from the run's start to its
	// settling, by component (user agent), from the audit log.
	Requests map[string]int `json:"requests,omitempty"`
	// ProcessCPUS is each process's CPU time from the run's start to its settling: the
	// plane's (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and the
	// simulator's own (fake kubelet, recorder, checker: this process), beside the gate's.
	ProcessCPUS map[string]float64 `json:"process_cpu_s,omitempty"`
	// WindowS is the time from the run's start to its settling, over which the requests and
	// the processes' CPU are counted.
	WindowS float64 `json:"window_s"`
	// from and to bound the run for the request counts.
	from, to time.Time
	// releases are when the recorder saw each release (the large phase's failover).
	releases []time.Time
}

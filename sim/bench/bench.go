package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The benchmark. Every figure is measured in one run of one plane, next to its reference
// from the same run, because these machines are shared and noisy: an absolute latency says
// as much about the neighbours as about the gate, a ratio to the plane's own floor does not.
//
// Phases, in order (the largest size last, because its memory phase's 100k Pods are never
// cleaned up):
//
//	for each burst size but the largest: pairs of the gate and the floor on the same
//	admission (the policy), alternating, then at the reference size the reactive peer, then
//	the gate with its webhook on a line of its own;
//	a burst whose init Pods all turn Ready at once (zero jitter), gate and floor;
//	paced joins, per rate: the gate, then the floor;
//	the largest size as the others, its webhook gate run followed by the memory phase.
//
// The gate runs as the built cmd/gate with its shipped client limits and workers.

// Options shape a benchmark run.
type Options struct {
	// Sizes are the burst sizes (nodes joining at once); default 100, 1000, 5000.
	Sizes []int
	// Reference is the size at which admission and the reactive peer are measured and the
	// targets are judged; default 1000 if in Sizes, else the largest.
	Reference int
	// Pods is how many workload Pods the memory phase adds; default 100000.
	Pods int
	// Pairs is how many gate/floor pairs run at each size; default 3. LargestPairs, if set,
	// overrides it at the largest size, whose runs take the longest.
	Pairs, LargestPairs int
	// Rates are the paced join rates, nodes per second; default 5, 20, 50.
	Rates []int
	// PacedFor is how long nodes join at each rate; default 60s.
	PacedFor time.Duration
	// ZeroJitter is the size of the burst whose init Pods turn Ready together; default 200.
	ZeroJitter int
	// CompareWorkers are --workers settings to run the gate with beside the shipped default,
	// at the reference size and in the zero-jitter burst (one gate run each, on the policy):
	// the cut in the gate's latency, as a ratio within one run. Default: 16 (the old default).
	CompareWorkers []int
	// Skip names phases not to run (reactive, webhook, zero-jitter, paced), to shorten an
	// experiment. What a skipped phase measures reads "not measured".
	Skip map[string]bool
	Seed uint64
	// Progress receives live lines (nil: quiet).
	Progress io.Writer
	// LogDir keeps the plane's and the gate's logs; a temp dir if empty.
	LogDir string
}

// Phases that can be skipped.
const (
	PhaseReactive   = "reactive"
	PhaseWebhook    = "webhook"
	PhaseZeroJitter = "zero-jitter"
	PhasePaced      = "paced"
)

// BenchReport is out/bench.json. A figure that was not measured is absent (null, or a zero
// count beside it), and reads "not measured" in bench.md; it meets no target.
type BenchReport struct {
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
	// Skipped names the phases this run left out.
	Skipped []string   `json:"skipped,omitempty"`
	Runs    []BenchRun `json:"runs"`
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

// BenchRun is one scenario run of the benchmark.
type BenchRun struct {
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
}

// Bench modes.
const (
	benchGate     = "gate"
	benchFloor    = "floor"
	benchPolicy   = "gate-policy"
	benchReactive = "reactive"
)

type bench struct {
	opts    Options
	rc      *rest.Config
	cs      kubernetes.Interface
	audit   string
	rep     *BenchReport
	largest int
	// samples keep each run's per-node moments until the audit log is read at the end.
	samples map[string][]sample
	// gateStages keep each gate run's own stage histograms, scraped when it settled.
	gateStages map[string]map[string]Quantiles
}

// Run starts an embedded plane and runs the benchmark on it.
func Run(ctx context.Context, opts Options) (*BenchReport, error) {
	opts = defaults(opts)
	dir, err := os.MkdirTemp("", "startupgate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	audit := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	plane := &controlplane.Embedded{LogDir: opts.LogDir, APIServerArgs: map[string]string{
		"audit-policy-file": filepath.Join(dir, "audit-policy.yaml"), "audit-log-path": audit,
		// The log rotates at 100 MB by default, which a 5000-node run passes; the rotated
		// files are read too, but one file is simpler to look at.
		"audit-log-maxsize": "100000",
	}}
	defer func() { _ = plane.Stop() }()
	rc, err := plane.Start(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	b := &bench{opts: opts, rc: rc, cs: cs, audit: audit, rep: &BenchReport{
		Machine: machine(), Reference: opts.Reference,
		Pairs: map[string][]Pair{}, PairRatio: map[string]RatioSummary{},
		ReleaseLatencyMS: map[string]check.Percentiles{}, BreakdownMS: map[string]Breakdown{},
		SimWallS: map[string]float64{}, PlaneStartS: plane.StartDuration().Seconds(),
	}, samples: map[string][]sample{}, gateStages: map[string]map[string]Quantiles{}}
	for p := range opts.Skip {
		b.rep.Skipped = append(b.rep.Skipped, p)
	}
	sort.Strings(b.rep.Skipped)
	for _, n := range opts.Sizes {
		b.largest = max(b.largest, n)
	}
	if err := b.phases(ctx); err != nil {
		return b.rep, err
	}
	return b.rep, b.fromAudit()
}

func defaults(opts Options) Options {
	if len(opts.Sizes) == 0 {
		opts.Sizes = []int{100, 1000, 5000}
	}
	if opts.Pods == 0 {
		opts.Pods = 100000
	}
	if opts.Pairs == 0 {
		opts.Pairs = 3
	}
	if len(opts.Rates) == 0 {
		opts.Rates = []int{5, 20, 50}
	}
	if opts.PacedFor == 0 {
		opts.PacedFor = time.Minute
	}
	if opts.ZeroJitter == 0 {
		opts.ZeroJitter = 200
	}
	if opts.CompareWorkers == nil {
		opts.CompareWorkers = []int{16}
	}
	if opts.Reference == 0 {
		opts.Reference = opts.Sizes[len(opts.Sizes)-1]
		for _, n := range opts.Sizes {
			if n == 1000 {
				opts.Reference = n
			}
		}
	}
	return opts
}

// phases runs every phase in order: the sizes but the largest, the zero-jitter burst, the
// paced rates, the largest size.
func (b *bench) phases(ctx context.Context) error {
	sizes := slices.Clone(b.opts.Sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	for _, n := range sizes[:len(sizes)-1] {
		if err := b.size(ctx, n); err != nil {
			return err
		}
	}
	if !b.opts.Skip[PhaseZeroJitter] {
		if err := b.zeroJitter(ctx); err != nil {
			return err
		}
	}
	if !b.opts.Skip[PhasePaced] {
		for _, rate := range b.opts.Rates {
			if err := b.paced(ctx, rate); err != nil {
				return err
			}
		}
	}
	return b.size(ctx, sizes[len(sizes)-1])
}

// auditPolicy logs every request once, when its response is complete, at the Metadata
// level: the count of the gate's Node writes; (from the timestamps) when each release
// reached the apiserver and was stored; and, by user agent, each component's requests.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
`

// size runs every mode at one burst size: the pairs, the reactive peer (at the reference),
// then the webhook gate on its own line.
func (b *bench) size(ctx context.Context, n int) error {
	key := strconv.Itoa(n)
	var cpu [2]float64 // gate, floor: CPU seconds over the pairs
	var rel [2]int
	var first *BenchRun // the first pair's gate run
	pairs := b.opts.Pairs
	if n == b.largest && b.opts.LargestPairs > 0 {
		pairs = b.opts.LargestPairs
	}
	for i := 1; i <= pairs; i++ {
		var adm *histogramDelta
		if n == b.opts.Reference && i == 1 {
			adm = &histogramDelta{}
		}
		g, err := b.run(ctx, load{mode: benchPolicy, nodes: n, pair: i, jitter: time.Second}, adm)
		if err != nil {
			return err
		}
		if adm != nil {
			b.rep.AdmissionMS.Policy = adm.quantiles()
		}
		f, err := b.run(ctx, load{mode: benchFloor, nodes: n, pair: i, jitter: time.Second}, nil)
		if err != nil {
			return err
		}
		b.rep.Pairs[key] = append(b.rep.Pairs[key], pairOf(g, f))
		if i == 1 {
			first = g
			if n == b.opts.Reference {
				b.breakdownOf(fmt.Sprintf("%d-node burst, policy gate, pair 1", n), g.Name)
				b.breakdownOf(fmt.Sprintf("%d-node burst, policy floor, pair 1", n), f.Name)
			}
		}
		for j, r := range []*BenchRun{g, f} {
			if r.CPUS > 0 {
				cpu[j] += r.CPUS
				rel[j] += r.Released
			}
		}
	}
	b.rep.PairRatio[key] = summarize(b.rep.Pairs[key])
	if n == b.opts.Reference {
		if err := b.compareWorkers(ctx, load{mode: benchPolicy, nodes: n, jitter: time.Second}, first); err != nil {
			return err
		}
	}
	if n == b.opts.Reference && rel[0] > 0 && rel[1] > 0 {
		c := &b.rep.CPUPer1000
		c.Gate, c.Floor = round2(cpu[0]/float64(rel[0])*1000), round2(cpu[1]/float64(rel[1])*1000)
		if c.Floor > 0 {
			c.Ratio = round2(c.Gate / c.Floor)
		}
	}
	if n == b.opts.Reference && !b.opts.Skip[PhaseReactive] {
		reactive, err := b.run(ctx, load{mode: benchReactive, nodes: n, jitter: time.Second}, nil)
		if err != nil {
			return err
		}
		b.rep.ReactiveEarlyPods = reactive.EarlyPods
	}
	if b.opts.Skip[PhaseWebhook] {
		return nil
	}
	var adm histogramDelta
	gateRun, err := b.run(ctx, load{mode: benchGate, nodes: n, jitter: time.Second}, &adm)
	if err != nil {
		return err
	}
	b.rep.ReleaseLatencyMS[key] = gateRun.LatencyMS
	b.rep.SimWallS[key] = gateRun.WallS
	if n == b.opts.Reference {
		b.rep.AdmissionMS.Webhook = adm.quantiles()
		b.breakdownOf(fmt.Sprintf("%d-node burst, webhook gate", n), gateRun.Name)
	}
	return nil
}

// zeroJitter is a burst whose init Pods all turn Ready 2s after they are bound, with no
// jitter: every release is due at about the same moment. Gate, then floor.
func (b *bench) zeroJitter(ctx context.Context) error {
	n := b.opts.ZeroJitter
	g, err := b.run(ctx, load{mode: benchPolicy, nodes: n, zero: true}, nil)
	if err != nil {
		return err
	}
	b.breakdownOf(fmt.Sprintf("%d-node burst, zero jitter, gate", n), g.Name)
	f, err := b.run(ctx, load{mode: benchFloor, nodes: n, zero: true}, nil)
	if err != nil {
		return err
	}
	b.breakdownOf(fmt.Sprintf("%d-node burst, zero jitter, floor", n), f.Name)
	b.rep.Pairs["zero-jitter-"+strconv.Itoa(n)] = []Pair{pairOf(g, f)}
	return b.compareWorkers(ctx, load{mode: benchPolicy, nodes: n, zero: true}, g)
}

// compareWorkers runs the gate on l once per CompareWorkers setting, beside shipped (the
// same load with the shipped default).
func (b *bench) compareWorkers(ctx context.Context, l load, shipped *BenchRun) error {
	for _, w := range b.opts.CompareWorkers {
		l.workers = w
		r, err := b.run(ctx, l, nil)
		if err != nil {
			return err
		}
		wr := WorkersRun{Burst: shipped.Name, Workers: w, Run: r.Name, P99: r.LatencyMS.P99, ShippedP99: shipped.LatencyMS.P99,
			WorkqueueP99: b.gateStages[r.Name][stageWorkqueue].P99, ShippedQueueP99: b.gateStages[shipped.Name][stageWorkqueue].P99}
		if complete(r) && complete(shipped) && r.LatencyMS.P99 > 0 {
			wr.Ratio = round2(shipped.LatencyMS.P99 / r.LatencyMS.P99)
		}
		b.rep.Workers = append(b.rep.Workers, wr)
	}
	return nil
}

// paced joins nodes at rate per second for PacedFor, gate then floor, both on the policy.
func (b *bench) paced(ctx context.Context, rate int) error {
	l := load{nodes: rate * int(b.opts.PacedFor/time.Second), rate: rate, jitter: time.Second}
	l.mode = benchPolicy
	g, err := b.run(ctx, l, nil)
	if err != nil {
		return err
	}
	l.mode = benchFloor
	f, err := b.run(ctx, l, nil)
	if err != nil {
		return err
	}
	b.rep.Paced = append(b.rep.Paced, Paced{Rate: rate, Seconds: b.opts.PacedFor.Seconds(), Nodes: l.nodes,
		Gate: g.LatencyMS, Floor: f.LatencyMS, Complete: complete(g) && complete(f)})
	return nil
}

func complete(r *BenchRun) bool { return r.Nodes > 0 && r.Released == r.Nodes }

func pairOf(g, f *BenchRun) Pair {
	p := Pair{Gate: g.Name, Floor: f.Name, GateP99: g.LatencyMS.P99, FloorP99: f.LatencyMS.P99}
	if complete(g) && complete(f) && f.LatencyMS.P99 > 0 {
		p.Ratio = round2(g.LatencyMS.P99 / f.LatencyMS.P99)
	}
	return p
}

// summarize is the median, min and max of the complete pairs' ratios.
func summarize(pairs []Pair) RatioSummary {
	var rs []float64
	for _, p := range pairs {
		if p.Ratio > 0 {
			rs = append(rs, p.Ratio)
		}
	}
	if len(rs) == 0 {
		return RatioSummary{}
	}
	slices.Sort(rs)
	med := rs[len(rs)/2]
	if len(rs)%2 == 0 {
		med = round2((rs[len(rs)/2-1] + rs[len(rs)/2]) / 2)
	}
	return RatioSummary{Median: med, Min: rs[0], Max: rs[len(rs)-1], N: len(rs)}
}

// load is what one run puts on the plane.
type load struct {
	mode  string
	nodes int
	// pair numbers a run of a pair (0: not paired).
	pair int
	// jitter spreads the init Pods' readiness: 2s ± jitter after binding.
	jitter time.Duration
	// zero: a zero-jitter burst.
	zero bool
	// rate > 0 paces the joins: rate nodes per second.
	rate int
	// workers > 0 runs the gate with --workers set so.
	workers int
}

// name is the run's scenario name; node names are it plus "-n<i>", which the audit log's
// counts rely on.
func (l load) name() string {
	if l.workers > 0 {
		w := l
		w.workers = 0
		return fmt.Sprintf("%s-w%d", w.name(), l.workers)
	}
	switch {
	case l.rate > 0:
		return fmt.Sprintf("bench-paced-%s-r%d", l.mode, l.rate)
	case l.zero:
		return fmt.Sprintf("bench-zero-%s-%d", l.mode, l.nodes)
	case l.pair > 1:
		return fmt.Sprintf("%s-p%d", benchName(l.mode, l.nodes), l.pair)
	}
	return benchName(l.mode, l.nodes)
}

// benchScenario is n nodes joining (at once, or paced) with n pending workload Pods and one
// init DaemonSet whose Pods are ready 2s ± jitter after they are bound.
func benchScenario(l load) (*scenario.Scenario, error) {
	extra := "gateProcess: {replicas: 1}\n"
	switch l.mode {
	case benchPolicy:
		extra += "admission: policy\n"
	case benchReactive:
		extra += "admission: none\ngate: {backfill: true}\n"
	case benchFloor:
		extra = ""
	}
	ready := "{after: 2s}"
	if l.jitter > 0 && !l.zero {
		ready = fmt.Sprintf("{after: 2s, jitter: %s}", l.jitter)
	}
	join := fmt.Sprintf("{count: %d, prefix: n}", l.nodes)
	timeout := benchTimeout(l.nodes)
	if l.rate > 0 {
		join = fmt.Sprintf("{count: %d, prefix: n, interval: %s}", l.nodes, time.Second/time.Duration(l.rate))
		timeout += time.Duration(l.nodes/l.rate) * time.Second
	}
	return scenario.Parse([]byte(fmt.Sprintf(`name: %s
description: benchmark run of %d nodes (%s)
%sworkloads:
  - {name: batch, replicas: %[2]d, cpu: 10m}
init:
  - name: init
    ready: %[5]s
timeline:
  - at: 0s
    join: %[6]s
expect:
  violations: %[7]s
timeout: %[8]s
`, l.name(), l.nodes, l.mode, extra, ready, join, map[bool]string{true: "some", false: "none"}[l.mode == benchReactive], timeout)))
}

// benchTimeout bounds a run of n nodes generously: a run that hits it is reported as such.
func benchTimeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n)*120*time.Millisecond
}

// run runs one load; adm, if set, receives the admission latency histogram delta over the
// run (webhook or policy, by mode).
func (b *bench) run(ctx context.Context, l load, adm *histogramDelta) (*BenchRun, error) {
	sc, err := benchScenario(l)
	if err != nil {
		return nil, err
	}
	gm := gateundertest.InProcess
	if l.mode == benchFloor {
		gm = gateundertest.Floor
	}
	hooks := &sim.Hooks{Shipped: true}
	if l.workers > 0 {
		hooks.GateArgs = []string{fmt.Sprintf("--workers=%d", l.workers)}
	}
	var end runEnd
	b.hooks(hooks, l, &end)
	r, err := sim.NewRunner(b.rc, sim.Options{Gate: gm, Seed: b.opts.Seed, Progress: b.opts.Progress, Hooks: hooks})
	if err != nil {
		return nil, err
	}
	metric, match, err := admissionMetric(l.mode)
	if err != nil {
		return nil, err
	}
	var before []byte
	if adm != nil {
		if before, err = b.scrapeAPIServer(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.quiet(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	b.progress("%s: %d nodes", sc.Name, l.nodes)
	cpu0 := processesCPU()
	res, err := r.Run(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	if adm != nil {
		after, err := b.scrapeAPIServer(ctx)
		if err != nil {
			return nil, err
		}
		if *adm, err = deltaOf(before, after, metric, match); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
	}
	br := &BenchRun{Name: sc.Name, Mode: l.mode, Nodes: res.Nodes, Released: res.Released, Passed: res.Passed,
		LatencyMS: res.ReleaseLatencyMS, WallS: round2(wallToReleased(res).Seconds()), Failures: res.Failures,
		CPUS: round2(end.cpu), Restarts: end.restarts, from: res.Start, to: end.settled}
	if br.to.IsZero() { // it never settled: count to its end
		br.to = time.Now()
	}
	br.WindowS = round2(br.to.Sub(br.from).Seconds())
	br.ProcessCPUS = cpuSpent(cpu0, end.procCPU)
	if br.ProcessCPUS != nil {
		br.ProcessCPUS[l.mode] = br.CPUS
	}
	for _, v := range res.Violations {
		if v.Kind == check.KindEarlyPod {
			br.EarlyPods++
		}
	}
	for _, d := range res.ReleaseLatency {
		br.ReleaseMS = append(br.ReleaseMS, round2(float64(d)/float64(time.Millisecond)))
	}
	br.Stuck = stuckNodes(res, end.nodes)
	b.samples[sc.Name] = samplesOf(res)
	if end.stages != nil && end.restarts == 0 {
		b.gateStages[sc.Name] = end.stages
	}
	if l.mode == benchGate {
		b.rep.GateEarlyPods += br.EarlyPods
	}
	b.rep.Runs = append(b.rep.Runs, *br)
	b.progress("%s: released %d/%d, p99 %.1f ms, wall %.1fs, early pods %d, cpu %.1fs, restarts %d, passed %v",
		sc.Name, res.Released, res.Nodes, br.LatencyMS.P99, br.WallS, br.EarlyPods, br.CPUS, br.Restarts, res.Passed)
	for _, s := range br.Stuck {
		b.progress("%s: stuck %s", sc.Name, s)
	}
	return br, nil
}

// quiet waits until every earlier run's nodes and namespaces are gone, deleting any a
// failed cleanup left. A run's own cleanup deletes its nodes and Pods and waits for the
// nodes; the namespace controller then deletes the rest (at 5000 nodes, tens of thousands
// of Events) in the background. A run started before that is done would share the plane
// with it, and the second run of every pair would pay for the first's cleanup.
func (b *bench) quiet(ctx context.Context) error {
	start := time.Now()
	sel := metav1.ListOptions{LabelSelector: scenario.Label}
	nodes, nss := b.cs.CoreV1().Nodes(), b.cs.CoreV1().Namespaces()
	err := nodes.DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	if err == nil {
		var list *corev1.NamespaceList
		if list, err = nss.List(ctx, sel); err == nil {
			for _, ns := range list.Items {
				err = errors.Join(err, client.IgnoreNotFound(nss.Delete(ctx, ns.Name, metav1.DeleteOptions{})))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("deleting the earlier runs' leftovers: %w", err)
	}
	one := metav1.ListOptions{LabelSelector: scenario.Label, Limit: 1}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, quietTimeout, true, func(ctx context.Context) (bool, error) {
		left, err := nss.List(ctx, one)
		if err != nil || len(left.Items) > 0 {
			return false, err
		}
		n, err := nodes.List(ctx, one)
		return err == nil && len(n.Items) == 0, err
	})
	if err != nil {
		return fmt.Errorf("waiting for the earlier runs' nodes and namespaces to be deleted: %w", err)
	}
	if d := time.Since(start); d > time.Second {
		b.progress("the earlier runs' namespaces took %.1fs to be deleted", d.Seconds())
	}
	return nil
}

// quietTimeout bounds the wait for a quiet plane.
const quietTimeout = 10 * time.Minute

// runEnd is what the Settled hook read while the run's processes and nodes still existed.
type runEnd struct {
	settled  time.Time
	procCPU  map[string]float64 // cumulative, at settled
	cpu      float64
	restarts int
	nodes    map[string]nodeEnd
	stages   map[string]Quantiles
}

// hooks arrange what the benchmark looks at in a run: at its end, the gate's (or floor's)
// CPU time, the nodes' taints (for stuck nodes) and the gate's stage histograms; for the
// webhook gate at the reference size, a CPU profile and its webhook timing; at the largest
// size, the memory phase.
func (b *bench) hooks(h *sim.Hooks, l load, end *runEnd) {
	webhookRef := l.mode == benchGate && l.nodes == b.opts.Reference
	if webhookRef && b.opts.LogDir != "" {
		h.Started = func(ctx context.Context, x sim.Live) {
			go b.profile(ctx, x, filepath.Join(b.opts.LogDir, "bench-gate-cpu.pprof"))
		}
	}
	h.Settled = func(ctx context.Context, x sim.Live) error {
		end.settled, end.procCPU = time.Now(), processesCPU()
		var err error
		if end.nodes, err = nodesAtEnd(ctx, x, l.name()); err != nil {
			return err
		}
		if reps := x.Gate().Replicas(); len(reps) > 0 {
			end.cpu, _ = processCPU(reps[0].Pid())
			n, exited := reps[0].Restarts()
			end.restarts, end.cpu = n, end.cpu+exited.Seconds()
		}
		if l.mode != benchFloor && len(x.Gate().Replicas()) > 0 {
			if end.stages, err = gateStages(ctx, x.Gate().Replicas()[0]); err != nil {
				return err
			}
		}
		if webhookRef {
			if err := b.handlerLatency(ctx, x); err != nil {
				return err
			}
		}
		if l.mode != benchGate || l.nodes != b.largest {
			return nil
		}
		return b.memory(ctx, x)
	}
}

// wallToReleased is the time from the first join to the last release.
func wallToReleased(res *report.Result) time.Duration {
	var last time.Time
	for _, rec := range res.Records {
		if rec.Released.Time.After(last) {
			last = rec.Released.Time
		}
	}
	if last.IsZero() {
		return 0
	}
	return last.Sub(res.Start)
}

// admissionMetric is the apiserver histogram that times the mode's admission, and the
// labels that select it. The webhook has its own series, by the shipped webhook's name (one
// bench run at a time uses it); the policy is timed as the MutatingAdmissionPolicy
// admission step, which also sees (and quickly passes) the run's other CREATEs, since that
// histogram has no resource label.
func admissionMetric(mode string) (string, map[string]string, error) {
	if mode == benchPolicy {
		return "apiserver_admission_controller_admission_duration_seconds",
			map[string]string{"name": "MutatingAdmissionPolicy", "type": "admit", "operation": "CREATE"}, nil
	}
	name, err := gateundertest.ShippedWebhookName()
	if err != nil {
		return "", nil, fmt.Errorf("finding the shipped webhook's name: %w", err)
	}
	return "apiserver_admission_webhook_admission_duration_seconds",
		map[string]string{"name": name, "type": "admit", "operation": "CREATE"}, nil
}

func (b *bench) scrapeAPIServer(ctx context.Context) ([]byte, error) {
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping apiserver metrics: %w", err)
	}
	return raw, nil
}

func (b *bench) progress(format string, args ...any) {
	if b.opts.Progress != nil {
		fmt.Fprintf(b.opts.Progress, "bench: "+format+"\n", args...)
	}
}

// memory measures the gate process at the settled largest burst: heap and RSS after a
// forced GC, then again once the filler Pods are stored. (The gate's label-selected watch
// is never sent them, so there is nothing of theirs to wait for on its side.)
func (b *bench) memory(ctx context.Context, x sim.Live) error {
	if len(x.Gate().Replicas()) == 0 {
		return fmt.Errorf("memory phase: no gate replica")
	}
	r := x.Gate().Replicas()[0]
	m0, err := gateMemory(ctx, r)
	if err != nil {
		return err
	}
	b.rep.MemoryNodes = len(x.Nodes())
	b.rep.GateHeapBytes.Pods0, b.rep.GateRSSBytes.Pods0 = m0.heap, m0.rss
	b.progress("memory: gate heap %d MiB, rss %d MiB at %d nodes; adding %d workload Pods",
		m0.heap>>20, m0.rss>>20, b.rep.MemoryNodes, b.opts.Pods)
	// The filler Pods get a namespace of their own, deleted (in the background, by the
	// namespace controller) once measured: in the run's namespace, the run's cleanup had to
	// delete 100,000 Pods in one request, which outlived the apiserver's request timeout.
	nss := x.Client().CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-filler-",
		Labels: map[string]string{scenario.Label: "bench-filler"}}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("memory phase: %w", err)
	}
	if err := fillPods(ctx, x.Client(), ns.Name, b.opts.Pods); err != nil {
		return err
	}
	b.rep.FillerPods = b.opts.Pods
	m1, err := gateMemory(ctx, r)
	if err != nil {
		return err
	}
	if err := nss.Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("memory phase: deleting %s: %w", ns.Name, err)
	}
	b.rep.GateHeapBytes.Pods100k, b.rep.GateRSSBytes.Pods100k = m1.heap, m1.rss
	if m0.heap > 0 {
		b.rep.GateHeapRatio = round2(float64(m1.heap) / float64(m0.heap))
	}
	b.progress("memory: gate heap %d MiB, rss %d MiB with %d more Pods", m1.heap>>20, m1.rss>>20, b.opts.Pods)
	return nil
}

// profile takes a CPU profile of the gate over the first 20s of the reference burst, for
// the question "what limits it" — answered by a profile, not a guess.
func (b *bench) profile(ctx context.Context, x sim.Live, path string) {
	if len(x.Gate().Replicas()) == 0 {
		return
	}
	raw, err := httpGet(ctx, x.Gate().Replicas()[0].PprofURL()+"/profile?seconds=20")
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		b.progress("gate CPU profile: %v", err)
		return
	}
	b.progress("gate CPU profile: %s (go tool pprof -top bin/gate %s)", path, path)
}

// handlerLatency reads the gate's own histogram of its webhook handler — the time inside
// the gate, where the apiserver's histogram also counts the call's way there and back.
func (b *bench) handlerLatency(ctx context.Context, x sim.Live) error {
	if len(x.Gate().Replicas()) == 0 {
		return nil
	}
	raw, err := httpGet(ctx, x.Gate().Replicas()[0].MetricsURL())
	if err != nil {
		return fmt.Errorf("scraping the gate: %w", err)
	}
	h, err := deltaOf(nil, raw, "controller_runtime_webhook_latency_seconds", map[string]string{"webhook": gate.NodeWebhookPath})
	if err != nil {
		return err
	}
	b.rep.AdmissionMS.GateHandler = h.quantiles()
	return nil
}

type gateMem struct{ heap, rss uint64 }

// gateMemory forces a GC in the gate (pprof's heap endpoint with gc=1) so that heap in use
// is the live heap, not wherever the collector happened to be, then reads its metrics.
func gateMemory(ctx context.Context, r *gateundertest.Replica) (gateMem, error) {
	if _, err := httpGet(ctx, r.PprofURL()+"/heap?gc=1"); err != nil {
		return gateMem{}, fmt.Errorf("forcing a GC in the gate: %w", err)
	}
	raw, err := httpGet(ctx, r.MetricsURL())
	if err != nil {
		return gateMem{}, fmt.Errorf("scraping the gate: %w", err)
	}
	v, err := gauges(raw, "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes")
	if err != nil {
		return gateMem{}, err
	}
	return gateMem{heap: uint64(v[0]), rss: uint64(v[1])}, nil
}

// fillPods creates n bare Pods in ns for a scheduler that does not exist, so they stay
// pending and cost the plane nothing but storage and watch traffic. They carry none of the
// gate's labels: the gate must not pay for them.
func fillPods(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", i), Labels: map[string]string{"sim.startupgate.io/filler": "true"}},
				Spec: corev1.PodSpec{SchedulerName: "startupgate-bench-nobody",
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			}
			err := kubelet.Retry(gctx, func() error {
				_, err := cs.CoreV1().Pods(ns).Create(gctx, p, metav1.CreateOptions{})
				return client.IgnoreAlreadyExists(err)
			})
			if err != nil {
				return fmt.Errorf("creating filler pod: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err() // cancelled before every Pod was even started
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

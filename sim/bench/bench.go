package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
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
//	the binding burst (burst.go): released nodes, then thousands of Pods at once, with the
//	Pod guard off and in three configs, in rounds;
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
	// OwnLabels makes the gate's rule wait for three components labelled as their own
	// charts label them (app=nvidia-driver-daemonset, k8s-app=cilium, app=ebs-csi-node):
	// three Pod caches instead of the default rule's one, for the memory figure of a
	// multi-scope config. The floor still waits for the default component alone.
	OwnLabels bool
	// Skip names phases not to run (reactive, webhook, zero-jitter, paced, binding-burst),
	// to shorten an experiment. What a skipped phase measures reads "not measured".
	Skip map[string]bool
	// Only names the one phase to run instead of them all; today binding-burst (empty:
	// every phase not skipped).
	Only string
	// BurstNodes, BurstPods, BurstExtra and BurstRounds shape the binding-burst phase
	// (burst.go): BurstNodes released nodes, then BurstPods Pods at once and BurstExtra
	// more nodes joining, in BurstRounds rounds of every guard mode. Defaults 100, 3000,
	// 10 (negative: none) and 3.
	BurstNodes, BurstPods, BurstExtra, BurstRounds int

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
	rep     *Report
	largest int
	// samples keep each run's per-node moments until the audit log is read at the end.
	samples map[string][]sample
	// gateStages keep each gate run's own stage histograms, scraped when it settled.
	gateStages map[string]map[string]Quantiles
	// burstMeta are what the audit log's figures need of each binding-burst run, in the
	// order of BindingBurst.Runs.
	burstMeta []burstMeta
}

// Run starts an embedded plane and runs the benchmark on it.
func Run(ctx context.Context, opts Options) (*Report, error) {
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
	b := &bench{opts: opts, rc: rc, cs: cs, audit: audit, rep: &Report{
		Machine: machine(), Reference: opts.Reference, OwnLabels: opts.OwnLabels,
		Pairs: map[string][]Pair{}, PairRatio: map[string]RatioSummary{},
		ReleaseLatencyMS: map[string]check.Percentiles{}, BreakdownMS: map[string]Breakdown{},
		SimWallS: map[string]float64{}, PlaneStartS: plane.StartDuration().Seconds(),
	}, samples: map[string][]sample{}, gateStages: map[string]map[string]Quantiles{}}
	for p := range opts.Skip {
		b.rep.Skipped = append(b.rep.Skipped, p)
	}
	b.rep.Only = opts.Only
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
	if opts.BurstNodes == 0 {
		opts.BurstNodes = 100
	}
	if opts.BurstPods == 0 {
		opts.BurstPods = 3000
	}
	if opts.BurstExtra == 0 {
		opts.BurstExtra = 10
	}
	if opts.BurstRounds == 0 {
		opts.BurstRounds = 3
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

// auditPolicy logs every request once, when its response is complete, at the Metadata
// level: the count of the gate's Node writes; (from the timestamps) when each release
// reached the apiserver and was stored; and, by user agent, each component's requests.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
`

func (b *bench) progress(format string, args ...any) {
	if b.opts.Progress != nil {
		fmt.Fprintf(b.opts.Progress, "bench: "+format+"\n", args...)
	}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

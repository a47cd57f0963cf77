package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// Phases, in order (the memory phase last, because its 100k Pods are never cleaned up):
//
//	for each burst size: the floor controller, then (at the reference size) the gate with
//	admission policy and the gate without admission (reactive), then the gate with its
//	webhook — at the largest size followed by the memory phase, while its nodes still exist.
//
// The gate runs as the built cmd/gate with its shipped client limits and workers.

// Options shape a benchmark run.
type Options struct {
	// Sizes are the burst sizes (nodes joining at once); default 100, 1000, 5000.
	Sizes []int
	// Reference is the size at which admission policy and the reactive peer are measured and
	// the targets are judged; default 1000 if in Sizes, else the largest.
	Reference int
	// Pods is how many workload Pods the memory phase adds; default 100000.
	Pods int
	// Skip names modes not to run (gate-policy, reactive), to shorten an experiment.
	Skip map[string]bool
	Seed uint64
	// Progress receives live lines (nil: quiet).
	Progress io.Writer
	// LogDir keeps the plane's and the gate's logs; a temp dir if empty.
	LogDir string
}

// BenchReport is out/bench.json.
type BenchReport struct {
	Machine string `json:"machine"`
	// Reference is the burst size the targets are judged at (and admission and the reactive
	// peer are measured at).
	Reference        int                          `json:"reference_nodes"`
	ReleaseLatencyMS map[string]check.Percentiles `json:"release_latency_ms"`
	FloorLatencyMS   map[string]check.Percentiles `json:"floor_latency_ms"`
	// FloorRatioP99 is gate p99 / floor p99 per size.
	FloorRatioP99 map[string]float64 `json:"floor_ratio_p99"`
	AdmissionMS   struct {
		Webhook Quantiles `json:"webhook"`
		Policy  Quantiles `json:"policy"`
		// GateHandler is the gate's own timing of its webhook handler (the webhook's share).
		GateHandler Quantiles `json:"gate_handler"`
	} `json:"admission_ms"`
	// WritesPerRelease counts the gate's successful Node writes (audit log) per released
	// node, over every webhook-mode gate run; conflicts are the 409s among its attempts.
	WritesPerRelease      float64 `json:"writes_per_release"`
	WriteConflicts        int     `json:"write_conflicts"`
	FloorWritesPerRelease float64 `json:"floor_writes_per_release"`
	GateHeapBytes         struct {
		Pods0    uint64 `json:"pods_0"`
		Pods100k uint64 `json:"pods_100k"`
	} `json:"gate_heap_bytes"`
	GateRSSBytes struct {
		Pods0    uint64 `json:"pods_0"`
		Pods100k uint64 `json:"pods_100k"`
	} `json:"gate_rss_bytes"`
	GateHeapRatio float64 `json:"gate_heap_ratio"`
	// MemoryNodes and FillerPods say at what the memory figures were taken.
	MemoryNodes int `json:"memory_nodes"`
	FillerPods  int `json:"filler_pods"`
	// GateCPUSecondsPer1000 is the gate process's CPU time, from start to all released, per
	// 1000 released nodes at the largest size (it includes start-up and admission).
	GateCPUSecondsPer1000 float64            `json:"gate_cpu_s_per_1000_releases"`
	SimWallS              map[string]float64 `json:"sim_wall_s"`
	PlaneStartS           float64            `json:"plane_start_s"`
	ReactiveEarlyPods     int                `json:"reactive_early_pods"`
	GateEarlyPods         int                `json:"gate_early_pods"`
	Runs                  []BenchRun         `json:"runs"`
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
	Failures  []string          `json:"failures,omitempty"`
	// Stuck names up to five nodes never released, with the checker's reason.
	Stuck []string `json:"stuck,omitempty"`
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
}

// Run starts an embedded plane and runs the benchmark on it.
func Run(ctx context.Context, opts Options) (*BenchReport, error) {
	if len(opts.Sizes) == 0 {
		opts.Sizes = []int{100, 1000, 5000}
	}
	if opts.Pods == 0 {
		opts.Pods = 100000
	}
	if opts.Reference == 0 {
		opts.Reference = opts.Sizes[len(opts.Sizes)-1]
		for _, n := range opts.Sizes {
			if n == 1000 {
				opts.Reference = n
			}
		}
	}
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
		Machine:          fmt.Sprintf("%d CPUs, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version()),
		ReleaseLatencyMS: map[string]check.Percentiles{}, FloorLatencyMS: map[string]check.Percentiles{},
		FloorRatioP99: map[string]float64{}, SimWallS: map[string]float64{},
		PlaneStartS: plane.StartDuration().Seconds(), Reference: opts.Reference,
	}}
	for _, n := range opts.Sizes {
		b.largest = max(b.largest, n)
	}
	for _, n := range opts.Sizes {
		if err := b.size(ctx, n); err != nil {
			return b.rep, err
		}
	}
	return b.rep, b.writes()
}

// auditPolicy logs every write to a Node, and nothing else: the count of the gate's writes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete"]
    resources: [{group: "", resources: ["nodes"]}]
  - level: None
`

// size runs every mode at one burst size.
func (b *bench) size(ctx context.Context, n int) error {
	floorRun, err := b.run(ctx, benchFloor, n, nil)
	if err != nil {
		return err
	}
	key := strconv.Itoa(n)
	b.rep.FloorLatencyMS[key] = floorRun.LatencyMS
	if n == b.opts.Reference && !b.opts.Skip[benchPolicy] {
		var adm histogramDelta
		if _, err := b.run(ctx, benchPolicy, n, &adm); err != nil {
			return err
		}
		b.rep.AdmissionMS.Policy = adm.quantiles()
	}
	if n == b.opts.Reference && !b.opts.Skip[benchReactive] {
		reactive, err := b.run(ctx, benchReactive, n, nil)
		if err != nil {
			return err
		}
		b.rep.ReactiveEarlyPods = reactive.EarlyPods
	}
	var adm histogramDelta
	gateRun, err := b.run(ctx, benchGate, n, &adm)
	if err != nil {
		return err
	}
	b.rep.ReleaseLatencyMS[key] = gateRun.LatencyMS
	b.rep.SimWallS[key] = gateRun.WallS
	b.rep.GateEarlyPods += gateRun.EarlyPods
	if floorRun.LatencyMS.P99 > 0 {
		b.rep.FloorRatioP99[key] = round2(gateRun.LatencyMS.P99 / floorRun.LatencyMS.P99)
	}
	if n == b.opts.Reference {
		b.rep.AdmissionMS.Webhook = adm.quantiles()
	}
	return nil
}

// benchScenario is a burst of n nodes with n pending workload Pods and one init DaemonSet
// whose Pods are ready 2s ± 1s after they are bound.
func benchScenario(mode string, n int) (*scenario.Scenario, error) {
	extra := "gateProcess: {replicas: 1}\n"
	switch mode {
	case benchPolicy:
		extra += "admission: policy\n"
	case benchReactive:
		extra += "admission: none\ngate: {backfill: true}\n"
	case benchFloor:
		extra = ""
	}
	return scenario.Parse([]byte(fmt.Sprintf(`name: bench-%s-%d
description: benchmark burst of %[2]d nodes (%[1]s)
%[3]sworkloads:
  - {name: batch, replicas: %[2]d, cpu: 10m}
init:
  - name: init
    ready: {after: 2s, jitter: 1s}
timeline:
  - at: 0s
    join: {count: %[2]d, prefix: n}
expect:
  violations: %[4]s
timeout: %[5]s
`, mode, n, extra, map[bool]string{true: "some", false: "none"}[mode == benchReactive], benchTimeout(n))))
}

// benchTimeout bounds a run of n nodes generously: a run that hits it is reported as such.
func benchTimeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n)*120*time.Millisecond
}

// run runs one mode at one size; adm, if set, receives the admission latency histogram
// delta over the run (webhook or policy, by mode).
func (b *bench) run(ctx context.Context, mode string, n int, adm *histogramDelta) (*BenchRun, error) {
	sc, err := benchScenario(mode, n)
	if err != nil {
		return nil, err
	}
	gm := gateundertest.InProcess
	if mode == benchFloor {
		gm = gateundertest.Floor
	}
	hooks := &sim.Hooks{Shipped: true}
	var cpuSeconds float64
	if mode == benchGate {
		b.gateHooks(hooks, n, &cpuSeconds)
	}
	r, err := sim.NewRunner(b.rc, sim.Options{Gate: gm, Seed: b.opts.Seed, Progress: b.opts.Progress, Hooks: hooks})
	if err != nil {
		return nil, err
	}
	metric, match, err := admissionMetric(mode)
	if err != nil {
		return nil, err
	}
	var before []byte
	if adm != nil {
		if before, err = b.scrapeAPIServer(ctx); err != nil {
			return nil, err
		}
	}
	b.progress("%s: %d nodes", sc.Name, n)
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
	br := &BenchRun{Name: sc.Name, Mode: mode, Nodes: res.Nodes, Released: res.Released, Passed: res.Passed,
		LatencyMS: res.ReleaseLatencyMS, WallS: round2(wallToReleased(res).Seconds()), Failures: res.Failures}
	for _, v := range res.Violations {
		switch {
		case v.Kind == check.KindEarlyPod:
			br.EarlyPods++
		case v.Kind == check.KindStuck && len(br.Stuck) < 5:
			br.Stuck = append(br.Stuck, v.Node+": "+v.Detail)
		}
	}
	if cpuSeconds > 0 && res.Released > 0 {
		b.rep.GateCPUSecondsPer1000 = round2(cpuSeconds / float64(res.Released) * 1000)
	}
	b.rep.Runs = append(b.rep.Runs, *br)
	b.progress("%s: released %d/%d, p99 %.1f ms, wall %.1fs, early pods %d, passed %v",
		sc.Name, res.Released, res.Nodes, br.LatencyMS.P99, br.WallS, br.EarlyPods, res.Passed)
	return br, nil
}

// gateHooks arranges what the benchmark looks at in a gate run: a CPU profile over the
// reference burst, the gate's own webhook timing once it has settled, and at the largest
// size the memory phase (cpuSeconds receives the gate's CPU time up to then).
func (b *bench) gateHooks(h *sim.Hooks, n int, cpuSeconds *float64) {
	if n == b.opts.Reference && b.opts.LogDir != "" {
		h.Started = func(ctx context.Context, x sim.Live) {
			go b.profile(ctx, x, filepath.Join(b.opts.LogDir, "bench-gate-cpu.pprof"))
		}
	}
	h.Settled = func(ctx context.Context, x sim.Live) error {
		if n == b.opts.Reference {
			if err := b.handlerLatency(ctx, x); err != nil {
				return err
			}
		}
		if n != b.largest {
			return nil
		}
		var err error
		*cpuSeconds, err = b.memory(ctx, x)
		return err
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
// is never sent them, so there is nothing of theirs to wait for on its side.) It returns the CPU seconds the gate
// had used by the time every node was released.
func (b *bench) memory(ctx context.Context, x sim.Live) (float64, error) {
	if len(x.Gate().Replicas()) == 0 {
		return 0, fmt.Errorf("memory phase: no gate replica")
	}
	r := x.Gate().Replicas()[0]
	m0, err := gateMemory(ctx, r)
	if err != nil {
		return 0, err
	}
	b.rep.MemoryNodes = len(x.Nodes())
	b.rep.GateHeapBytes.Pods0, b.rep.GateRSSBytes.Pods0 = m0.heap, m0.rss
	b.progress("memory: gate heap %d MiB, rss %d MiB at %d nodes; adding %d workload Pods",
		m0.heap>>20, m0.rss>>20, b.rep.MemoryNodes, b.opts.Pods)
	if err := fillPods(ctx, x.Client(), x.Namespace(), b.opts.Pods); err != nil {
		return 0, err
	}
	b.rep.FillerPods = b.opts.Pods
	m1, err := gateMemory(ctx, r)
	if err != nil {
		return 0, err
	}
	b.rep.GateHeapBytes.Pods100k, b.rep.GateRSSBytes.Pods100k = m1.heap, m1.rss
	if m0.heap > 0 {
		b.rep.GateHeapRatio = round2(float64(m1.heap) / float64(m0.heap))
	}
	b.progress("memory: gate heap %d MiB, rss %d MiB with %d more Pods", m1.heap>>20, m1.rss>>20, b.opts.Pods)
	return m0.cpu, nil
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

type gateMem struct {
	heap, rss uint64
	cpu       float64
}

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
	v, err := gauges(raw, "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total")
	if err != nil {
		return gateMem{}, err
	}
	return gateMem{heap: uint64(v[0]), rss: uint64(v[1]), cpu: v[2]}, nil
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

// writes counts, from the audit log, every Node write by the gate and by the floor, per
// run, and derives the writes per release.
func (b *bench) writes() error {
	f, err := os.Open(b.audit)
	if err != nil {
		return fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	counts, err := countNodeWrites(f)
	if err != nil {
		return err
	}
	var gateWrites, gateReleased, floorWrites, floorReleased int
	for i := range b.rep.Runs {
		run := &b.rep.Runs[i]
		c := counts[run.Name]
		run.Writes, run.Conflicts = c.ok, c.conflicts
		switch run.Mode {
		case benchGate:
			gateWrites += c.ok
			gateReleased += run.Released
			b.rep.WriteConflicts += c.conflicts
		case benchFloor:
			floorWrites += c.ok
			floorReleased += run.Released
		}
	}
	if gateReleased > 0 {
		b.rep.WritesPerRelease = round2(float64(gateWrites) / float64(gateReleased))
	}
	if floorReleased > 0 {
		b.rep.FloorWritesPerRelease = round2(float64(floorWrites) / float64(floorReleased))
	}
	return nil
}

type writeCount struct{ ok, conflicts int }

// countNodeWrites reads an audit log and counts, per scenario (the node name up to its
// last "-n"), the Node writes whose user agent is the gate's or the floor's: successful ones
// and conflicts. Status writes (kubelet) and other controllers' writes are not counted.
func countNodeWrites(r io.Reader) (map[string]writeCount, error) {
	out := map[string]writeCount{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Name        string `json:"name"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if ev.ObjectRef.Resource != "nodes" || ev.ObjectRef.Subresource != "" || ev.Verb == "create" || ev.Verb == "delete" {
			continue
		}
		if !strings.HasPrefix(ev.UserAgent, "gate/") && !strings.HasPrefix(ev.UserAgent, "startupgate-gate") &&
			!strings.HasPrefix(ev.UserAgent, "startupgate-floor") {
			continue
		}
		i := strings.LastIndex(ev.ObjectRef.Name, "-n")
		if i < 0 {
			continue
		}
		scenario := ev.ObjectRef.Name[:i]
		c := out[scenario]
		switch {
		case ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300:
			c.ok++
		case ev.ResponseStatus.Code == 409:
			c.conflicts++
		}
		out[scenario] = c
	}
	return out, sc.Err()
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

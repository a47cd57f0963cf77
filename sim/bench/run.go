package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

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
	// ownLabels: the gate's rule waits for components labelled as their own charts label
	// them (Options.OwnLabels).
	ownLabels bool
	// The large phase's loads (see large.go): static is the number of static nodes on the
	// plane, which names the run, as before does the before gate's run; workloads, if set,
	// is the number of workload Pods (default: one per node); replicas > 1 runs that many
	// gate replicas; probe reads the fresh gate before the first join, and failover kills
	// its leader as nodes join.
	large     bool
	before    bool
	warmup    bool
	static    int
	workloads int
	replicas  int
	probe     *gateProbe
	failover  *failoverProbe
	// burst is a run of the binding-burst phase (burst.go), which names and shapes it.
	burst *burstLoad
}

// name is the run's scenario name; node names are it plus "-n<i>", which the audit log's
// counts rely on.
func (l load) name() string {
	if l.burst != nil {
		return burstName(l.burst.mode, l.burst.round)
	}
	if l.large {
		switch {
		case l.failover != nil && l.before:
			return fmt.Sprintf("lg%d-before-failover-%d", l.static, l.nodes)
		case l.failover != nil:
			return fmt.Sprintf("lg%d-failover-%d", l.static, l.nodes)
		case l.before:
			return fmt.Sprintf("lg%d-before-%d", l.static, l.nodes)
		case l.warmup:
			return fmt.Sprintf("lg%d-warmup-%d", l.static, l.nodes)
		}
		return fmt.Sprintf("lg%d-%s-%d", l.static, l.mode, l.nodes)
	}
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
// init DaemonSet whose Pods are ready 2s ± jitter after they are bound. With ownLabels, three
// more DaemonSets are labelled as a GPU driver's, a CNI's and a CSI driver's charts label
// them, and the gate (not the floor, which caches one scope) waits for those three instead.
func benchScenario(l load) (*scenario.Scenario, error) {
	if l.burst != nil {
		return burstScenario(l.burst)
	}
	extra := fmt.Sprintf("gateProcess: {replicas: %d}\n", max(1, l.replicas))
	switch l.mode {
	case benchPolicy:
		extra += "admission: policy\n"
	case benchReactive:
		extra += "admission: none\n"
	case benchFloor:
		extra = ""
	}
	if l.mode != benchFloor {
		extra += gateBlock(l.mode == benchReactive, l.ownLabels)
	}
	ready := "{after: 2s}"
	if l.jitter > 0 && !l.zero {
		ready = fmt.Sprintf("{after: 2s, jitter: %s}", l.jitter)
	}
	init := "  - {name: init, ready: " + ready + "}\n"
	if l.ownLabels {
		for _, c := range ownComponents {
			init += fmt.Sprintf("  - {name: %s, labels: {%s: %s}, ready: %s}\n", c.name, c.key, c.value, ready)
		}
	}
	join := fmt.Sprintf("{count: %d, prefix: n}", l.nodes)
	timeout := benchTimeout(l.nodes) + staticSlack(l.static)
	workloads := l.nodes
	if l.workloads > 0 {
		workloads = l.workloads
	}
	if l.rate > 0 {
		join = fmt.Sprintf("{count: %d, prefix: n, interval: %s}", l.nodes, time.Second/time.Duration(l.rate))
		timeout += time.Duration(l.nodes/l.rate) * time.Second
	}
	return scenario.Parse([]byte(fmt.Sprintf(`name: %s
description: benchmark run of %d nodes (%s)
%sworkloads:
  - {name: batch, replicas: %[9]d, cpu: 10m}
init:
%[5]stimeline:
  - at: 0s
    join: %[6]s
expect:
  violations: %[7]s
timeout: %[8]s
`, l.name(), l.nodes, l.mode, extra, init, join, map[bool]string{true: "some", false: "none"}[l.mode == benchReactive], timeout, workloads)))
}

// ownComponents are the components of Options.OwnLabels, as their charts label their Pods:
// no label key in common, and app shared by two of them and by the memory phase's filler
// Pods, so that only each component's own selector keeps the filler out of the gate's cache.
var ownComponents = []struct{ name, key, value string }{
	{"driver", "app", "nvidia-driver-daemonset"},
	{"cni", "k8s-app", "cilium"},
	{"csi", "app", "ebs-csi-node"},
}

// gateBlock is a scenario's gate config: backfill for the reactive peer, and with ownLabels
// a rule that waits for ownComponents; empty when both are unset (the default config).
func gateBlock(backfill, ownLabels bool) string {
	if !backfill && !ownLabels {
		return ""
	}
	s := "gate:\n"
	if backfill {
		s += "  backfill: true\n"
	}
	if ownLabels {
		s += "  rules:\n    - name: default\n      taint: {key: startup.k8s.io/initializing, value: wait, effect: NoSchedule}\n      components:\n"
		for _, c := range ownComponents {
			s += fmt.Sprintf("        - {name: %s, selector: %s=%s}\n", c.name, c.key, c.value)
		}
	}
	return s
}

// benchTimeout bounds a run of n nodes generously: a run that hits it is reported as such.
func benchTimeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n)*120*time.Millisecond
}

// staticSlack is what a run on static nodes adds to its bound. The controller-manager's
// DaemonSet controller weighs every node for each DaemonSet it syncs, so on tens of
// thousands of static nodes it binds a burst's init Pods minutes after their nodes join
// (run D in docs/performance.md).
func staticSlack(static int) time.Duration { return time.Duration(static) * 6 * time.Millisecond }

// run runs one load; adm, if set, receives the admission latency histogram delta over the
// run (webhook or policy, by mode).
func (b *bench) run(ctx context.Context, l load, adm *histogramDelta) (*RunResult, error) {
	l.ownLabels = b.opts.OwnLabels
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
	if l.burst != nil {
		b.burstHooks(hooks, l.burst)
	}
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
	if l.burst != nil {
		l.burst.res = res
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
	br := &RunResult{Name: sc.Name, Mode: l.mode, Nodes: res.Nodes, Released: res.Released, Passed: res.Passed,
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
	for i := range res.Records {
		if t := res.Records[i].Released.Time; !t.IsZero() {
			br.releases = append(br.releases, t)
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
	sel := metav1.ListOptions{LabelSelector: leftovers}
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
	one := metav1.ListOptions{LabelSelector: leftovers, Limit: 1}
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

// leftovers selects the runs' nodes and namespaces: every scenario's but the large phase's
// static nodes, which stay for the next size.
var leftovers = scenario.Label + "," + scenario.Label + "!=" + staticScenario

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
		h.Started = func(ctx context.Context, live sim.Live) {
			go b.profile(ctx, live, filepath.Join(b.opts.LogDir, "bench-gate-cpu.pprof"))
		}
	}
	if l.probe != nil {
		if l.failover == nil { // a failover's figures are taken after both replicas synced
			h.BeforeGate = l.probe.beforeGate(b.progress)
		}
		h.Started = func(ctx context.Context, live sim.Live) { l.probe.started(ctx, live, l.failover, b.progress) }
		h.LeaderWithin = startedTimeout // a fresh replica lists every static init Pod before it campaigns
	}
	h.Settled = func(ctx context.Context, live sim.Live) error {
		end.settled, end.procCPU = time.Now(), processesCPU()
		var err error
		if end.nodes, err = nodesAtEnd(ctx, live, l.name()); err != nil {
			return err
		}
		if reps := live.Gate().Replicas(); len(reps) > 0 {
			end.cpu, _ = processCPU(reps[0].Pid())
			n, exited := reps[0].Restarts()
			end.restarts, end.cpu = n, end.cpu+exited.Seconds()
		}
		// A failover run's first replica was killed: it has no histograms left to read.
		if l.mode != benchFloor && l.failover == nil && len(live.Gate().Replicas()) > 0 {
			// On a plane of static nodes, the burst's stages start after the gate's
			// initial list, whose backlog would otherwise fill its workqueue histogram.
			var since []byte
			if l.probe != nil {
				since = l.probe.baseline
			}
			if end.stages, err = gateStages(ctx, live.Gate().Replicas()[0], since); err != nil {
				return err
			}
		}
		if webhookRef {
			if err := b.handlerLatency(ctx, live); err != nil {
				return err
			}
		}
		if l.mode != benchGate || l.nodes != b.largest {
			return nil
		}
		return b.memory(ctx, live)
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

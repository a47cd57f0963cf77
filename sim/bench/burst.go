package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The binding-burst phase: what the Pod guard (the gate's validating webhook on Pod CREATE
// and pods/binding CREATE) costs the scheduler when thousands of Pods are bound at once.
// BurstNodes nodes join and are released; then a workload of 0 replicas is scaled to
// BurstPods, and BurstExtra more nodes join as it starts, so that the controller's release
// latency during the burst is measured too. Four modes, run once per round, in an order that
// rotates from round to round (the plane's state drifts over a run, and the first run after
// a quiet spell is not like the others):
//
//	guard-off: the default config, no guard;
//	guard-startup: podGuard with the default (startup) rule;
//	guard-reboot: podGuard, the default rule with onReboot: gate;
//	guard-continuous: podGuard, the default rule and a continuous rule on a second component.
//
// Admission of Node CREATE is the policy in every mode, so that the guard is the gate's one
// webhook. Each run's figures come from the apiserver's audit log (the scale, every binding
// and its answer, the gate's requests), its admission histogram (the guard's latency as the
// apiserver times it) and a watch of the burst's Pods (create to bound). No timing is
// asserted.

// PhaseBindingBurst is the binding-burst phase's name, for Skip and Only.
const PhaseBindingBurst = "binding-burst"

// Binding-burst modes: the gate's config in each run.
const (
	burstGuardOff        = "guard-off"
	burstGuardStartup    = "guard-startup"
	burstGuardReboot     = "guard-reboot"
	burstGuardContinuous = "guard-continuous"
)

// burstModes are the modes in the order of the first round; guard-off first, the
// reference every ratio is taken to.
var burstModes = []string{burstGuardOff, burstGuardStartup, burstGuardReboot, burstGuardContinuous}

// burstScenarioPrefix begins every binding-burst run's scenario name, and
// burstNamespacePrefix its namespace's (the simulator names it sim-<scenario>-<n>): the
// audit log's bindings are kept for those namespaces only.
const (
	burstScenarioPrefix  = "bench-bind-"
	burstNamespacePrefix = "sim-" + burstScenarioPrefix
)

// burstWorkload is the burst's Deployment; its Pods' names begin with it and a dash.
const burstWorkload = "burst"

// workloadLabel is the label the simulator gives a workload's Pods (scenario.Deployment).
const workloadLabel = "sim.startupgate.io/workload"

func burstName(mode string, round int) string {
	return fmt.Sprintf("%s%s-r%d", burstScenarioPrefix, mode, round)
}

// burstOrder is the order of the modes in round r (1-based): the first round's, rotated
// by r-1, so that each mode runs first once in every len(burstModes) rounds.
func burstOrder(r int) []string {
	n := len(burstModes)
	out := make([]string, n)
	for i := range out {
		out[i] = burstModes[(i+r-1)%n]
	}
	return out
}

// burstLoad is one binding-burst run: what shapes it and what its hooks read.
type burstLoad struct {
	mode               string
	round              int
	nodes, pods, extra int

	// Read by the run's hooks.
	ns    string
	watch *podWatch
	// base is the apiserver's metrics at the gate's start; atScale, once the workload was
	// scaled (the poll that waits for it may miss, then the run's start is the baseline).
	base    []byte
	atScale chan []byte
	adm     histogramDelta
	admFrom string
	// failOpen counts the guard's calls the apiserver let through (failurePolicy Ignore)
	// because the guard did not answer in time or failed.
	failOpen float64
	res      *report.Result
}

// burstScenario is l's scenario: l.nodes nodes joining at once with one init DaemonSet
// (Ready 2s after binding), then, once every one is released, the workload scaled from 0 to
// l.pods (10m CPU each: the fake kubelet's nodes have 8 CPUs and room for 110 Pods) and
// l.extra more nodes joining.
func burstScenario(l *burstLoad) (*scenario.Scenario, error) {
	const defaultRule = "    - name: default\n" +
		"      taint: {key: startup.k8s.io/initializing, value: wait, effect: NoSchedule}\n" +
		"      components: [{name: init, selector: startup.k8s.io/component=init}]\n"
	gate := ""
	init := "  - {name: init, ready: {after: 2s}}\n"
	switch l.mode {
	case burstGuardOff:
	case burstGuardStartup:
		gate = "gate:\n  podGuard: true\n"
	case burstGuardReboot:
		gate = "gate:\n  podGuard: true\n  rules:\n" + defaultRule + "      onReboot: gate\n"
	case burstGuardContinuous:
		gate = "gate:\n  podGuard: true\n  rules:\n" + defaultRule +
			"    - name: cni\n      mode: continuous\n" +
			"      taint: {key: startup.k8s.io/cni-unready, effect: NoSchedule}\n" +
			"      components: [{name: cni, selector: startup.k8s.io/component=cni}]\n"
		init += "  - {name: cni, labels: {startup.k8s.io/component: cni}, continuous: true, ready: {after: 2s}}\n"
	default:
		return nil, fmt.Errorf("binding burst: unknown mode %q", l.mode)
	}
	extra := ""
	if l.extra > 0 {
		extra = fmt.Sprintf("  - at: 0s\n    afterReleased: true\n    join: {count: %d, prefix: x}\n", l.extra)
	}
	return scenario.Parse([]byte(fmt.Sprintf(`name: %[1]s
description: binding burst, %[2]s, round %[3]d - %[4]d released nodes, then %[5]d Pods at once and %[6]d more nodes
gateProcess: {replicas: 1}
admission: policy
%[7]sworkloads:
  - {name: %[8]s, replicas: 0, cpu: 10m}
init:
%[9]stimeline:
  - at: 0s
    join: {count: %[4]d, prefix: n}
  - at: 0s
    afterReleased: true
    scale: {workload: %[8]s, replicas: %[5]d}
%[10]sexpect:
  violations: none
timeout: %[11]s
`, burstName(l.mode, l.round), l.mode, l.round, l.nodes, l.pods, l.extra, gate, burstWorkload, init, extra, burstTimeout(l))))
}

// burstTimeout bounds a binding-burst run generously: a run that hits it is reported so.
func burstTimeout(l *burstLoad) time.Duration {
	return benchTimeout(l.nodes+l.extra) + time.Duration(l.pods)*150*time.Millisecond
}

// bindingBurst runs the phase: every mode once per round, in rotated order.
func (b *bench) bindingBurst(ctx context.Context) error {
	o := b.opts
	guard, err := podGuardWebhookName()
	if err != nil {
		return err
	}
	bb := &BindingBurst{Nodes: o.BurstNodes, Pods: o.BurstPods, Extra: max(o.BurstExtra, 0), Rounds: o.BurstRounds, GuardWebhook: guard}
	b.rep.BindingBurst = bb
	for r := 1; r <= o.BurstRounds; r++ {
		for _, mode := range burstOrder(r) {
			bl := &burstLoad{mode: mode, round: r, nodes: o.BurstNodes, pods: o.BurstPods, extra: max(o.BurstExtra, 0)}
			run, err := b.run(ctx, load{mode: mode, nodes: bl.nodes + bl.extra, burst: bl}, nil)
			if err != nil {
				return err
			}
			br := BurstRun{Run: run.Name, Mode: mode, Round: r, Pods: bl.pods, Extra: bl.extra, Nodes: run.Nodes, Released: run.Released, GateRestarts: run.Restarts,
				AdmissionMS: bl.adm.quantiles(), AdmissionFrom: bl.admFrom, FailOpen: int(bl.failOpen)}
			if bl.watch != nil {
				br.CreateToBoundMS, br.CreateToBoundN, br.SeenBound = bl.watch.createToBound()
			}
			meta := burstMeta{ns: bl.ns}
			if bl.res != nil {
				br.ExtraReleased, meta.extraInit = extraNodes(bl.res, run.Name+"-x")
			}
			bb.Runs = append(bb.Runs, br)
			b.burstMeta = append(b.burstMeta, meta)
			b.progress("%s: create to bound p50 %.0f ms, p99 %.0f ms (%d Pods watched); guard admission %s",
				run.Name, br.CreateToBoundMS.P50, br.CreateToBoundMS.P99, br.CreateToBoundN, admission(br.AdmissionMS))
		}
	}
	return nil
}

// podGuardWebhookName is the shipped Pod guard's webhook name: the apiserver's admission
// metrics and its denials name it.
func podGuardWebhookName() (string, error) {
	raw, err := deploy.FS.ReadFile("overlays/pod-guard/pod-guard.yaml")
	if err != nil {
		return "", fmt.Errorf("reading the shipped pod guard: %w", err)
	}
	var vw struct {
		Webhooks []struct {
			Name string `json:"name"`
		} `json:"webhooks"`
	}
	if err := yaml.Unmarshal(raw, &vw); err != nil || len(vw.Webhooks) != 1 {
		return "", fmt.Errorf("deploy/overlays/pod-guard/pod-guard.yaml: want one webhook (%w)", err)
	}
	return vw.Webhooks[0].Name, nil
}

// burstHooks add the binding-burst run's readings to the run's hooks: once the gate leads,
// the namespace, a watch of the burst's Pods and a scrape of the apiserver's metrics, and
// another scrape as soon as the workload is scaled; at the end, the last scrape.
func (b *bench) burstHooks(h *sim.Hooks, bl *burstLoad) {
	started, settled := h.Started, h.Settled
	bl.atScale = make(chan []byte, 1)
	h.Started = func(ctx context.Context, live sim.Live) {
		if started != nil {
			started(ctx, live)
		}
		bl.ns = live.Namespace()
		bl.watch = watchPods(ctx, live.Client(), bl.ns, burstWorkload)
		var err error
		if bl.base, err = b.scrapeAPIServer(ctx); err != nil {
			b.progress("%s: %v", burstName(bl.mode, bl.round), err)
		}
		go b.scrapeAtScale(ctx, live.Client(), bl)
	}
	h.Settled = func(ctx context.Context, live sim.Live) error {
		bl.watch.stop()
		if err := b.guardAdmission(ctx, bl); err != nil {
			return err
		}
		if settled != nil {
			return settled(ctx, live)
		}
		return nil
	}
}

// scrapeAtScale scrapes the apiserver's metrics as soon as the burst's workload is scaled,
// so that the guard's admission figures are the burst's: the polls every 50ms see the
// scale before most of its Pods are created (the ReplicaSet controller's first batch).
func (b *bench) scrapeAtScale(ctx context.Context, cs kubernetes.Interface, bl *burstLoad) {
	deps := cs.AppsV1().Deployments(bl.ns)
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := deps.Get(ctx, burstWorkload, metav1.GetOptions{})
		return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas > 0, nil
	})
	if err != nil {
		return
	}
	if raw, err := b.scrapeAPIServer(ctx); err == nil {
		bl.atScale <- raw
	}
}

// guardAdmission reads the guard's admission histogram and fail-open count from the
// scrape at the scale (else at the gate's start) to now.
func (b *bench) guardAdmission(ctx context.Context, bl *burstLoad) error {
	before, from := bl.base, "run start"
	select {
	case raw := <-bl.atScale:
		before, from = raw, "scale"
	default:
	}
	if before == nil {
		return nil
	}
	after, err := b.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	name := b.rep.BindingBurst.GuardWebhook
	match := map[string]string{"name": name, "type": "validating"}
	if bl.adm, err = deltaOf(before, after, "apiserver_admission_webhook_admission_duration_seconds", match); err != nil {
		return err
	}
	bl.admFrom = from
	b0, err := counterSum(before, "apiserver_admission_webhook_fail_open_count", match)
	if err != nil {
		return err
	}
	b1, err := counterSum(after, "apiserver_admission_webhook_fail_open_count", match)
	if err != nil {
		return err
	}
	bl.failOpen = max(b1-b0, 0)
	return nil
}

// counterSum sums every series of a counter whose labels include match (0 when the
// counter has no series yet).
func counterSum(raw []byte, metric string, match map[string]string) (float64, error) {
	fams, err := parseMetrics(raw)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, m := range fams[metric].GetMetric() {
		if labelsMatch(m.GetLabel(), match) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}

// podWatch is when a watch of the burst's Pods saw each created, and each bound: both ends
// of create to bound through one watch, whose lag then counts at both ends.
type podWatch struct {
	mu             sync.Mutex
	created, bound map[string]time.Time
	// seenBound counts Pods the watch saw first already bound (a relist): not timed.
	seenBound int
	stopCh    chan struct{}
	stopOnce  sync.Once
}

func watchPods(ctx context.Context, cs kubernetes.Interface, ns, workload string) *podWatch {
	w := &podWatch{created: map[string]time.Time{}, bound: map[string]time.Time{}, stopCh: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = workloadLabel + "=" + workload }))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.saw(obj, true) },
		UpdateFunc: func(_, obj any) { w.saw(obj, false) },
	})
	go func() {
		select {
		case <-ctx.Done():
			w.stop()
		case <-w.stopCh:
		}
	}()
	go inf.Run(w.stopCh)
	return w
}

func (w *podWatch) saw(obj any, added bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.created[pod.Name]; !ok {
		w.created[pod.Name] = now
		if added && pod.Spec.NodeName != "" {
			w.seenBound++
			w.bound[pod.Name] = time.Time{} // not timed
			return
		}
	}
	if _, ok := w.bound[pod.Name]; !ok && pod.Spec.NodeName != "" {
		w.bound[pod.Name] = now
	}
}

func (w *podWatch) stop() {
	if w != nil {
		w.stopOnce.Do(func() { close(w.stopCh) })
	}
}

// createToBound are the percentiles of create to bound over the Pods the watch saw both
// created and bound, their number, and the number it saw first already bound.
func (w *podWatch) createToBound() (check.Percentiles, int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ds []time.Duration
	for name, c := range w.created {
		if bt, ok := w.bound[name]; ok && !bt.IsZero() {
			ds = append(ds, bt.Sub(c))
		}
	}
	return roundPercentiles(check.PercentilesOf(ds)), len(ds), w.seenBound
}

func roundPercentiles(p check.Percentiles) check.Percentiles {
	return check.Percentiles{P50: round2(p.P50), P90: round2(p.P90), P99: round2(p.P99), Max: round2(p.Max)}
}

// burstMeta is what the audit log's figures need of a binding-burst run: its namespace,
// and the init Pods (by name) bound to each node that joined in the burst.
type burstMeta struct {
	ns        string
	extraInit map[string][]string
}

// extraNodes counts the released nodes whose names begin with prefix (the nodes joined in
// the burst) and names the init Pods the recorder saw bound to each.
func extraNodes(res *report.Result, prefix string) (released int, initPods map[string][]string) {
	initPods = map[string][]string{}
	for i := range res.Records {
		rec := &res.Records[i]
		if !strings.HasPrefix(rec.Name, prefix) {
			continue
		}
		if !rec.Released.IsZero() {
			released++
		}
		for _, bd := range rec.Bindings {
			if bd.Init {
				_, name, _ := strings.Cut(bd.Pod, "/")
				initPods[rec.Name] = append(initPods[rec.Name], name)
			}
		}
	}
	return released, initPods
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate"
)

// Options apply to every scenario of a run.
type Options struct {
	Gate GateMode
	// Seed fixes every random choice; 0 means 1.
	Seed uint64
	// Progress receives a live line per scenario every second (nil: quiet).
	Progress io.Writer
	// Plane is the embedded plane, when that is the backend (apiserverRestart needs it).
	Plane *Embedded
	// GateAs, if set, is the identity the gate's client impersonates — e.g. the deployed
	// ServiceAccount, to prove that its RBAC is enough. The simulator's own clients stay admin.
	GateAs *rest.ImpersonationConfig
}

var (
	runSeq  atomic.Uint64
	running sync.Map // scenario name -> struct{}: one run per name at a time
)

func claim(name string) bool {
	_, busy := running.LoadOrStore(name, struct{}{})
	return !busy
}

func release(name string) { running.Delete(name) }

// Runner runs scenarios against one control plane.
type Runner struct {
	Config *rest.Config
	Opts   Options

	client  kubernetes.Interface
	writers kubernetes.Interface // the foreign taint writers, under their own field manager

	// shipped, started and settled are the benchmark's: run a process gate with its shipped
	// client limits, and look at the run once the gate leads and once it has settled
	// (before it is judged and cleared).
	shipped bool
	started func(ctx context.Context, x *run)
	settled func(ctx context.Context, x *run) error
}

// NewRunner prepares a runner; rc should allow high QPS (the fake kubelet and the recorder
// must never be the bottleneck).
func NewRunner(rc *rest.Config, opts Options) (*Runner, error) {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 5000, 10000
	own := rest.CopyConfig(rc)
	own.UserAgent = "startupgate-sim"
	cs, err := kubernetes.NewForConfig(own)
	if err != nil {
		return nil, err
	}
	wrc := rest.CopyConfig(rc)
	wrc.UserAgent = "sim-taint-writer"
	writers, err := kubernetes.NewForConfig(wrc)
	if err != nil {
		return nil, err
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Gate == "" {
		opts.Gate = GateInProcess
	}
	return &Runner{Config: rc, Opts: opts, client: cs, writers: writers}, nil
}

// run is the state of one scenario run.
type run struct {
	*Runner
	sc       *Scenario
	cfg      gate.Config
	ns       string
	kubelet  *Kubelet
	recorder *Recorder
	harness  *harness
	start    time.Time

	mu       sync.Mutex
	errs     []string
	notes    []string
	joined   int
	joins    map[string]*Join
	replicas map[string]int32
	steps    int
	counters struct {
		Counters
		watchCuts int
	}
}

// Run runs one scenario and judges it. An error means the run itself could not be carried
// out (the plane failed); a scenario that merely failed its expectations returns a Result
// with Passed false.
func (r *Runner) Run(ctx context.Context, sc *Scenario) (*Result, error) {
	cfg := sc.GateConfig()
	sel := ScenarioLabel + "=" + sc.Name
	if cfg.NodeSelector != "" {
		sel = cfg.NodeSelector + "," + sel
	}
	cfg.NodeSelector = sel
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !claim(sc.Name) {
		return nil, fmt.Errorf("scenario %s is already running on this plane (its node names would collide)", sc.Name)
	}
	defer release(sc.Name)
	// A fresh namespace per run: the previous run's may still be terminating, and nothing
	// needs to wait for that.
	ns := fmt.Sprintf("sim-%s-%d", sc.Name, runSeq.Add(1)+uint64(time.Now().UnixNano()%100000))
	x := &run{Runner: r, sc: sc, cfg: cfg, ns: ns, joins: map[string]*Join{}, replicas: map[string]int32{}}
	outer := ctx // the settled hook's own work (the benchmark's memory phase) is not the run's
	ctx, cancel := context.WithTimeout(ctx, sc.Timeout+2*time.Minute)
	defer cancel()

	if err := x.cleanup(ctx); err != nil {
		return nil, fmt.Errorf("clearing leftovers of %s: %w", sc.Name, err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if err := x.cleanup(cctx); err != nil {
			x.fail(fmt.Errorf("cleanup: %w", err))
		}
	}()
	if err := x.setup(ctx); err != nil {
		return nil, err
	}

	x.recorder = NewRecorder(&x.cfg, &Ledger{}, x.ns, sc.Init)
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	if err := x.recorder.Run(rctx, r.client, ScenarioLabel+"="+sc.Name); err != nil {
		return nil, err
	}
	x.harness = newHarness(r.Config, r.client, r.Opts.Gate, x.cfg, sc, x.ns)
	x.harness.as = r.Opts.GateAs
	x.harness.shipped = r.shipped
	defer func() { x.fail(x.harness.stop(context.Background())) }()
	gctx, gcancel := context.WithCancel(ctx)
	defer gcancel()
	if sc.GateStartsAt == 0 {
		if err := x.harness.start(gctx, x.replicaCount()); err != nil {
			return nil, fmt.Errorf("starting gate: %w", err)
		}
		// The benchmark measures a running gate, not its start: the first node joins once
		// the controller leads.
		if r.shipped && x.harness.process {
			if _, err := x.waitLeader(gctx); err != nil {
				return nil, err
			}
		}
		if r.started != nil {
			r.started(gctx, x)
		}
	}
	x.kubelet = &Kubelet{Client: r.client, Namespace: x.ns, Scenario: sc.Name, Seed: r.Opts.Seed, Init: sc.Init,
		Errors: x.fail, ReadyAccepted: x.recorder.ReadyAccepted}
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	if err := x.kubelet.Start(kctx); err != nil {
		return nil, err
	}

	x.start = time.Now()
	x.recorder.start = x.start
	if sc.GateStartsAt > 0 {
		go after(gctx, sc.GateStartsAt, func() {
			if err := x.harness.start(gctx, x.replicaCount()); err != nil {
				x.fail(fmt.Errorf("starting gate late: %w", err))
			}
		})
	}
	x.play(kctx)
	kcancel()
	if err := x.recorder.Barrier(ctx, r.client, sc.Name); err != nil {
		x.fail(fmt.Errorf("recorder barrier: %w", err))
	}
	if r.settled != nil {
		x.fail(r.settled(outer, x))
	}
	rcancel()
	return x.judge(), nil
}

func (x *run) replicaCount() int {
	if x.sc.GateProcess != nil {
		return x.sc.GateProcess.Replicas
	}
	return 1
}

// note records something that happened during the run, for the report.
func (x *run) note(format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.notes) < 50 {
		x.notes = append(x.notes, fmt.Sprintf("%6.1fs ", time.Since(x.start).Seconds())+fmt.Sprintf(format, args...))
	}
}

// joinedNodes lists the names of the nodes registered so far.
func (x *run) joinedNodes() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]string, 0, len(x.joins))
	for n := range x.joins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// fail records an asynchronous error; any makes the run fail.
func (x *run) fail(err error) {
	if err == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.errs) < 20 {
		x.errs = append(x.errs, err.Error())
	}
}

// play runs the timeline, each step in its own goroutine at its offset, and waits until the
// run settles or times out.
func (x *run) play(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range x.sc.Timeline {
		step := &x.sc.Timeline[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(x.start.Add(step.At))):
			}
			x.step(ctx, step)
			x.mu.Lock()
			x.steps++
			x.mu.Unlock()
		}()
	}
	deadline := x.start.Add(x.sc.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastProgress := time.Time{}
	for {
		settled := x.settled()
		if x.Opts.Progress != nil && (time.Since(lastProgress) >= time.Second || settled) {
			lastProgress = time.Now()
			x.progress()
		}
		if settled || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	cancelWait := make(chan struct{})
	go func() { wg.Wait(); close(cancelWait) }()
	select {
	case <-cancelWait:
	case <-time.After(time.Second):
		// Steps still running (a join retrying against a closed webhook) end with ctx.
	}
}

func (x *run) step(ctx context.Context, s *Step) {
	var err error
	for _, act := range s.present() {
		err = act(x, ctx)
	}
	if err != nil && ctx.Err() == nil {
		x.fail(fmt.Errorf("step at %s: %w", s.At, err))
	}
}

// action runs one kind of step.
type action func(x *run, ctx context.Context) error

// present lists the actions a step holds (validation requires exactly one). It is the one
// list of step kinds: a kind added to Step and not here is never valid, so it cannot be
// accepted and then silently not run.
func (s *Step) present() []action {
	var acts []action
	add := func(present bool, a action) {
		if present {
			acts = append(acts, a)
		}
	}
	add(s.Join != nil, func(x *run, ctx context.Context) error { x.join(ctx, s.Join); return nil })
	add(s.Reregister != nil, func(x *run, ctx context.Context) error { return x.reregister(ctx, s.Reregister) })
	add(s.Scale != nil, func(x *run, ctx context.Context) error { return x.scale(ctx, s.Scale) })
	add(s.NodeDelete != nil, func(x *run, ctx context.Context) error { return x.nodeDelete(ctx, s.NodeDelete) })
	add(s.WebhookOutage != nil, func(x *run, ctx context.Context) error { return x.webhookOutage(ctx, s.WebhookOutage) })
	add(s.WebhookLatency != nil, func(x *run, ctx context.Context) error { return x.webhookLatency(ctx, s.WebhookLatency) })
	add(s.GateCrash != nil, func(x *run, ctx context.Context) error { return x.gateCrash(ctx, s.GateCrash) })
	add(s.LeaderFailover != nil, func(x *run, ctx context.Context) error { return x.leaderFailover(ctx, s.LeaderFailover) })
	add(s.TaintWriters != nil, func(x *run, ctx context.Context) error { return x.taintWriters(ctx, s.TaintWriters) })
	add(s.APIServerRestart != nil, func(x *run, ctx context.Context) error { return x.apiserverRestart(ctx, s.APIServerRestart) })
	add(s.WatchDrops != nil, func(x *run, ctx context.Context) error { return x.watchDrops(ctx, s.WatchDrops) })
	add(s.DeleteInitDaemonSet != nil, func(x *run, ctx context.Context) error { return x.deleteInitDaemonSet(ctx, s.DeleteInitDaemonSet) })
	add(s.BypassPods != nil, func(x *run, ctx context.Context) error { return x.bypassPods(ctx, s.BypassPods) })
	return acts
}

// join registers the nodes of a join step: all at once (bounded concurrency) or one per
// interval. A failed registration is retried every 500ms, as a kubelet would.
func (x *run) join(ctx context.Context, j *Join) {
	taints := make([]corev1.Taint, 0, len(j.Taints))
	for _, t := range j.Taints {
		taints = append(taints, t.core())
	}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < j.Count; i++ {
		name := x.sc.NodeName(j.Prefix, i)
		x.mu.Lock()
		x.joins[name] = j
		x.mu.Unlock()
		if j.Interval > 0 && i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(j.Interval):
			}
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			x.register(ctx, name, j, taints)
		}()
	}
	wg.Wait()
}

func (x *run) register(ctx context.Context, name string, j *Join, taints []corev1.Taint) {
	for {
		err := x.kubelet.Register(ctx, name, j.Labels, taints, j.ReadyAfter)
		if err == nil {
			x.mu.Lock()
			x.joined++
			x.mu.Unlock()
			return
		}
		if apierrors.IsAlreadyExists(err) {
			x.fail(err)
			return
		}
		x.mu.Lock()
		x.counters.RegistrationsRefused++
		x.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reregister deletes a node and registers it again under the same name, as an autoscaler
// that reuses names does. With KeepOldInitPod the old node's init Pods stay bound and Ready,
// as they do while pod GC lags; otherwise they are deleted with the node.
func (x *run) reregister(ctx context.Context, rr *Reregister) error {
	x.mu.Lock()
	j := x.joins[rr.Node]
	x.mu.Unlock()
	if j == nil {
		return fmt.Errorf("reregister: node %s never joined", rr.Node)
	}
	x.kubelet.Deregister(rr.Node)
	if err := x.client.CoreV1().Nodes().Delete(ctx, rr.Node, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		return err
	}
	if !rr.KeepOldInitPod {
		if err := x.deletePodsOn(ctx, rr.Node); err != nil {
			return err
		}
	}
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		_, err := x.client.CoreV1().Nodes().Get(ctx, rr.Node, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	}); err != nil {
		return err
	}
	taints := make([]corev1.Taint, 0, len(j.Taints))
	for _, t := range j.Taints {
		taints = append(taints, t.core())
	}
	x.mu.Lock()
	x.joined--
	x.mu.Unlock()
	x.register(ctx, rr.Node, j, taints)
	return nil
}

func (x *run) deletePodsOn(ctx context.Context, node string) error {
	pods, err := x.client.CoreV1().Pods(x.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		err := x.client.CoreV1().Pods(x.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		if ignoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// settled: every step has run, every workload Pod is bound, no more nodes are stuck than
// expected, and every other gated node is either released or was never tainted but is
// already serving (the gate had no chance at it). Without a gate nothing is released, so
// there it is enough that the init Pods are ready.
func (x *run) settled() bool {
	x.mu.Lock()
	steps := x.steps
	want := 0
	for _, n := range x.replicas {
		want += int(n)
	}
	x.mu.Unlock()
	if steps < len(x.sc.Timeline) {
		return false
	}
	recs := x.recorder.Snapshot()
	v := Check(recs, x.start, x.bounds())
	if v.WorkloadPods < want || v.Stuck > x.sc.Expect.Stuck {
		return false
	}
	for _, rec := range recs {
		if !rec.Gated || !rec.Deleted.IsZero() {
			continue
		}
		if x.harness.off {
			if rec.InitReady.IsZero() {
				return false
			}
			continue
		}
		if rec.Released.IsZero() && rec.Tainted.IsZero() && !hasWorkload(&rec) {
			return false
		}
	}
	return true
}

func hasWorkload(rec *NodeRecord) bool {
	for _, b := range rec.Bindings {
		if !b.Tolerates && !b.Init {
			return true
		}
	}
	return false
}

func (x *run) progress() {
	v := Check(x.recorder.Snapshot(), x.start, x.bounds())
	x.mu.Lock()
	joined, fails := x.joined, x.counters.RegistrationsRefused
	x.mu.Unlock()
	early := 0
	for _, viol := range v.Violations {
		if viol.Kind == KindEarlyPod {
			early++
		}
	}
	line := fmt.Sprintf("  %-36s %6.1fs  joined %4d  released %4d/%-4d  early pods %d",
		x.sc.Name, time.Since(x.start).Seconds(), joined, v.Released, v.Gated, early)
	if fails > 0 {
		line += fmt.Sprintf("  registrations refused %d", fails)
	}
	fmt.Fprintln(x.Opts.Progress, line)
}

// poll calls f every 100ms until it is true, errors, or timeout passes. It is harness
// plumbing (waiting for the plane to converge), never part of the gate.
func poll(ctx context.Context, timeout time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := f()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunAll runs scenarios, up to parallel at once on the shared plane (each isolates itself:
// namespace, node names, scenario label, its own gate and admission objects). Exclusive
// scenarios run alone, first. Results come back in input order.
func (r *Runner) RunAll(ctx context.Context, scs []*Scenario, parallel int) ([]*Result, error) {
	if parallel < 1 {
		parallel = 1
	}
	results := make([]*Result, len(scs))
	errs := make([]error, len(scs))
	for i, sc := range scs {
		if sc.Exclusive() {
			results[i], errs[i] = r.Run(ctx, sc)
		}
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, sc := range scs {
		if sc.Exclusive() {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i], errs[i] = r.Run(ctx, sc)
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

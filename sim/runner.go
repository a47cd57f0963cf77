package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/autoscaler"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/faults"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/record/watch"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
	"github.com/startupgate/startupgate/sim/step"
)

// Options apply to every scenario of a run.
type Options struct {
	Gate gateundertest.Mode
	// Seed fixes every random choice; 0 means 1.
	Seed uint64
	// Progress receives a live line per scenario every second (nil: quiet); one that is
	// also a report.ProgressReceiver gets the same as data, and when a run starts and ends.
	Progress io.Writer
	// Plane is the embedded plane, when that is the backend (apiserverRestart needs it).
	Plane *controlplane.Embedded
	// GateAs, if set, is the identity the gate's client impersonates — e.g. the deployed
	// ServiceAccount, to prove that its RBAC is enough. The simulator's own clients stay admin.
	GateAs *rest.ImpersonationConfig
	// Hooks let the benchmark look into a run; nil for the suite.
	Hooks *Hooks
	// StopWhenCaught ends the run as soon as the recorder shows a violation of this kind,
	// if it is one no later event undoes (caughtEarly): a negative control, run only to be
	// caught, need not wait out a timeout its hazard has already decided.
	StopWhenCaught string
	// QuietFor ends the run once every step has run and no node's record has changed for
	// this long, its nodes released or not (0: never). An exploration's run whose edits take
	// a rule's hold away on purpose sets it: its nodes may stay held to its timeout, with
	// nothing left to judge of them.
	QuietFor time.Duration
}

// Hooks are the benchmark's view of a run.
type Hooks struct {
	// Shipped runs a process gate as deployed (shipped client limits and leases, no relay
	// hop), and lets the first node join only once it leads: the benchmark measures a
	// running gate, not its start.
	Shipped bool
	// GateArgs are extra cmd/gate flags for the shipped gate.
	GateArgs []string
	// LeaderWithin is how long Shipped waits for a replica to lead; gateundertest.LeaderWait
	// if zero.
	LeaderWithin time.Duration
	// BeforeGate runs once the run's objects exist (its namespace, DaemonSets and
	// workloads) and the recorder watches, just before the gate starts; its error fails
	// the run. The large benchmark waits there for the plane to digest those objects, so
	// that a fresh gate's start is measured on a quiet plane.
	BeforeGate func(ctx context.Context) error
	// Started runs once the gate is up, before the first join.
	Started func(ctx context.Context, l Live)
	// Settled runs once the run has settled and the recorder has caught up, before the
	// run is judged and cleared. Its error fails the run; its context is not bounded by the
	// scenario's timeout.
	Settled func(ctx context.Context, l Live) error
}

// Live is a run in progress, as a hook sees it.
type Live struct{ run *run }

// Gate is the gate under test.
func (l Live) Gate() *gateundertest.Harness { return l.run.harness }

// Client is the simulator's admin client.
func (l Live) Client() kubernetes.Interface { return l.run.client }

// Namespace holds the run's Pods and DaemonSets.
func (l Live) Namespace() string { return l.run.ns }

// Nodes are the nodes joined so far.
func (l Live) Nodes() []string { return l.run.state.Nodes() }

var runSeq atomic.Uint64

// Runner runs scenarios against one control plane.
type Runner struct {
	Config *rest.Config
	Opts   Options

	client  kubernetes.Interface
	writers kubernetes.Interface // the foreign taint writers, under their own field manager
	// The fake kubelet and the recorder each have a client of their own, with a user agent
	// of its own, so that the apiserver's audit log can tell what each costs the plane.
	kubeletClient  kubernetes.Interface
	recorderClient kubernetes.Interface

	// running are the scenarios this runner runs now (name -> struct{}): one run per name
	// at a time, as a run's node names are its scenario's.
	running sync.Map
}

// User agents of the simulator's clients: its own (setup, timeline, cleanup), the fake
// kubelet's and the recorder's. The foreign taint writers are sim-taint-writer.
const (
	UserAgent         = "startupgate-sim"
	KubeletUserAgent  = "startupgate-sim-kubelet"
	RecorderUserAgent = "startupgate-sim-recorder"
)

// NewRunner prepares a runner; rc should allow high QPS (the fake kubelet and the recorder
// must never be the bottleneck).
func NewRunner(rc *rest.Config, opts Options) (*Runner, error) {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 5000, 10000
	var clients [4]kubernetes.Interface
	for i, ua := range []string{UserAgent, "sim-taint-writer", KubeletUserAgent, RecorderUserAgent} {
		c := rest.CopyConfig(rc)
		c.UserAgent = ua
		controlplane.Protobuf(c)
		controlplane.LogSlowRequests(c, ctrllog.Log)
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, err
		}
		clients[i] = cs
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Gate == "" {
		opts.Gate = gateundertest.InProcess
	}
	return &Runner{Config: rc, Opts: opts, client: clients[0], writers: clients[1],
		kubeletClient: clients[2], recorderClient: clients[3]}, nil
}

// run is the state of one scenario run.
type run struct {
	*Runner
	sc       *scenario.Scenario
	seed     uint64 // this run's: Opts.Seed, or one repetition's
	cfg      config.Config
	ns       string
	kubelet  *kubelet.Kubelet
	recorder *watch.Recorder
	ledger   *record.Ledger
	harness  *gateundertest.Harness
	tally    faults.Tally
	// state is what the timeline's steps remember (sim/step).
	state step.State
	// autoscale is the run's Karpenter (nil: the scenario has no autoscaler).
	autoscale *autoscaler.Run
	start     time.Time

	mu       sync.Mutex
	errs     []string
	notes    []string
	steps    int
	lastStep time.Time // when the last step to finish did
	// stoppedCaught: the run ended at its negative control's catch (Options.StopWhenCaught).
	stoppedCaught bool
	// recordsSeen is what the node records showed last (Options.QuietFor), and since when.
	recordsSeen  string
	recordsSince time.Time
	// stranded are the violations of the nodes as the run left them (judgeEnd).
	stranded []check.Violation
}

// Run runs one scenario and judges it. An error means the run itself could not be carried
// out (the plane failed); a scenario that merely failed its expectations returns a Result
// with Passed false.
func (r *Runner) Run(ctx context.Context, sc *scenario.Scenario) (*report.Result, error) {
	return r.runSeed(ctx, sc, r.Opts.Seed)
}

// RunSeed is Run with another seed than the runner's: one case of an exploration.
func (r *Runner) RunSeed(ctx context.Context, sc *scenario.Scenario, seed uint64) (*report.Result, error) {
	return r.runSeed(ctx, sc, seed)
}

// runSeed is Run with the seed of one repetition.
//
// The deferred steps (stopping the gate, the cleanup) run after the run is judged; a failure
// of theirs still fails the run (late), or joins its error, and is never dropped.
func (r *Runner) runSeed(ctx context.Context, sc *scenario.Scenario, seed uint64) (res *report.Result, err error) {
	rn, err := r.newRun(sc, seed)
	if err != nil {
		return nil, err
	}
	// A process gate's binary is built (once, when $STARTUPGATE_GATE_BINARY does not name
	// one) before the scenario's clock starts: on a cold build cache that takes minutes,
	// which a scenario's timeout must not pay for.
	if rn.harness.Process() {
		if _, err := gateundertest.GateBinary(); err != nil {
			return nil, err
		}
	}
	if _, busy := r.running.LoadOrStore(sc.Name, struct{}{}); busy {
		return nil, fmt.Errorf("scenario %s is already running on this plane (its node names would collide)", sc.Name)
	}
	defer r.running.Delete(sc.Name)
	outer := ctx // the settled hook's own work (the benchmark's memory phase) is not the run's
	// The run's bound: its scenario's timeout, and two minutes to set up and judge. A Started
	// hook's work (the large benchmark's probe of a fresh gate: its initial list of every
	// Node, a minute of idle CPU, priced status reports) is not the run's (below).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bound := sc.Timeout + 2*time.Minute
	boundTimer := time.AfterFunc(bound, cancel)
	defer boundTimer.Stop()

	if err := rn.cleanup(ctx); err != nil {
		return nil, fmt.Errorf("clearing leftovers of %s: %w", sc.Name, err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), cleanupTimeout(sc))
		defer ccancel()
		res, err = rn.late(res, err, "cleanup", rn.cleanup(cctx))
	}()
	if err := rn.usePlane(); err != nil {
		return nil, err
	}
	defer func() { res, err = rn.late(res, err, "restoring the plane", rn.restorePlane()) }()
	if err := rn.setup(ctx); err != nil {
		return nil, err
	}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	if err := rn.recorder.Run(rctx, r.recorderClient, scenario.Label+"="+sc.Name); err != nil {
		return nil, err
	}
	defer func() { res, err = rn.late(res, err, "stopping the gate", rn.harness.Stop(context.Background())) }()
	gctx, gcancel := context.WithCancel(ctx)
	defer gcancel()
	// The hooks' work and their wait for a leader are not the run's: the bound is held
	// while they run, and starts again after them.
	hooked := rn.Opts.Hooks != nil && sc.GateStartsAt == 0
	if hooked {
		boundTimer.Stop()
		if before := rn.Opts.Hooks.BeforeGate; before != nil {
			if err := before(ctx); err != nil {
				return nil, err
			}
		}
	}
	err = rn.startGate(gctx)
	if hooked {
		boundTimer.Reset(bound)
	}
	if err != nil {
		return nil, err
	}
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	if err := rn.kubelet.Start(kctx); err != nil {
		return nil, err
	}
	if rn.sc.Autoscaler != nil {
		if err := rn.startAutoscaler(ctx); err != nil {
			return nil, err
		}
		defer rn.stopAutoscaler()
	}
	rn.start = time.Now()
	if rn.autoscale != nil {
		if err := rn.launchAutoscaler(kctx); err != nil {
			return nil, err
		}
	}
	rn.play(kctx, gctx)
	rn.stopAutoscaler() // before the judging: nothing more is launched, or counted
	if rn.autoscale != nil {
		rn.noteWaits(ctx)
	}
	kcancel()
	if err := rn.recorder.Barrier(ctx, r.recorderClient, sc.Name); err != nil {
		rn.Fail(fmt.Errorf("recorder barrier: %w", err))
	} else if err := rn.recorder.ResolveReleases(ctx, r.recorderClient); err != nil {
		rn.Fail(fmt.Errorf("recorder: %w", err))
	}
	rn.Fail(rn.judgeEnd(ctx))
	if h := r.Opts.Hooks; h != nil && h.Settled != nil {
		rn.Fail(h.Settled(outer, Live{run: rn}))
	}
	rcancel()
	return rn.judge(), nil
}

// cleanupTimeout bounds a run's cleanup: a minute, and more for a large run, whose nodes
// and Pods take the apiserver longer to delete.
func cleanupTimeout(sc *scenario.Scenario) time.Duration {
	return time.Minute + time.Duration(sc.JoinCount())*40*time.Millisecond
}

// late adds a failure found after the run was judged to its result (the run fails), or to
// its error when it has no result.
func (rn *run) late(res *report.Result, err error, what string, lateErr error) (*report.Result, error) {
	if lateErr == nil {
		return res, err
	}
	lateErr = fmt.Errorf("%s: %w", what, lateErr)
	if res == nil {
		return nil, errors.Join(err, lateErr)
	}
	res.Errors = append(res.Errors, lateErr.Error())
	res.Failures = append(res.Failures, "simulator error: "+lateErr.Error())
	res.Passed = false
	res.Reproduce = rn.reproduce()
	return res, err
}

// newRun prepares the run's parts: the gate Config scoped to the scenario's nodes, a fresh
// namespace, the recorder, the gate under test and the fake kubelet.
func (r *Runner) newRun(sc *scenario.Scenario, seed uint64) (*run, error) {
	if err := gateundertest.CheckMode(r.Opts.Gate, sc); err != nil {
		return nil, err
	}
	cfg := scenario.ScopeConfig(sc.GateConfig, sc.Name)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// A fresh namespace per run: the previous run's may still be terminating, and nothing
	// needs to wait for that.
	ns := fmt.Sprintf("sim-%s-%d", sc.Name, runSeq.Add(1)+uint64(time.Now().UnixNano()%100000))
	rn := &run{Runner: r, sc: sc, seed: seed, cfg: cfg, ns: ns, ledger: &record.Ledger{}}
	rn.recorder = watch.NewRecorder(&rn.cfg, rn.ledger, ns, sc.Init)
	rn.harness = gateundertest.New(r.Config, r.client, r.Opts.Gate, rn.cfg, sc, ns,
		gateundertest.Options{As: r.Opts.GateAs, Shipped: r.Opts.Hooks != nil && r.Opts.Hooks.Shipped, Args: r.gateArgs(),
			Run: fmt.Sprintf("%s seed %d", sc.Name, seed)})
	rn.kubelet = &kubelet.Kubelet{Client: r.kubeletClient, Namespace: ns, Scenario: sc.Name, Seed: seed, Init: sc.Init,
		Version: controlplane.KubeVersion, Errors: rn.Fail, ReadyAccepted: rn.recorder.ReadyAccepted,
		StatusReport: sc.Kubelet.NodeStatusReportFrequency}
	if sc.Plane != nil {
		rn.kubelet.LeaseRenew = sc.Plane.NodeMonitorGracePeriod / 4
	}
	if sc.Autoscaler != nil {
		// The autoscaler's nodes carry the scenario's label from their NodePool.
		rn.kubelet.Adopt = labels.SelectorFromSet(labels.Set{scenario.Label: sc.Name})
	}
	return rn, nil
}

// usePlane restarts the embedded controller-manager with the scenario's plane settings.
func (rn *run) usePlane() error {
	if rn.sc.Plane == nil {
		return nil
	}
	if rn.Opts.Plane == nil {
		return fmt.Errorf("scenario %s sets plane: it needs the embedded backend", rn.sc.Name)
	}
	return rn.Opts.Plane.SetNodeMonitorGracePeriod(rn.sc.Plane.NodeMonitorGracePeriod)
}

// restorePlane leaves the plane as the next run expects it: the controller-manager back on
// its defaults after a scenario that changed them, and the scheduler and controller-manager
// started afresh after one that restarted the apiserver, so that the next run does not
// inherit their watches' backoff (see controlplane.Embedded.RestartControllers).
func (rn *run) restorePlane() error {
	if rn.Opts.Plane == nil {
		return nil
	}
	if rn.sc.Plane != nil {
		if err := rn.Opts.Plane.SetNodeMonitorGracePeriod(controlplane.DefaultNodeMonitorGracePeriod); err != nil {
			return err
		}
	}
	if rn.sc.RestartsAPIServer() {
		return rn.Opts.Plane.RestartControllers()
	}
	return nil
}

func (r *Runner) gateArgs() []string {
	if r.Opts.Hooks == nil {
		return nil
	}
	return r.Opts.Hooks.GateArgs
}

// startGate starts the gate now, unless the scenario installs it later (then play does).
func (rn *run) startGate(ctx context.Context) error {
	if rn.sc.GateStartsAt > 0 {
		return nil
	}
	if err := rn.harness.Start(ctx, rn.replicaCount()); err != nil {
		return fmt.Errorf("starting gate: %w", err)
	}
	h := rn.Opts.Hooks
	if h == nil {
		return nil
	}
	if h.Shipped && rn.harness.Process() {
		if _, err := rn.harness.WaitLeaderWithin(ctx, cmp.Or(h.LeaderWithin, gateundertest.LeaderWait)); err != nil {
			return err
		}
	}
	if h.Started != nil {
		h.Started(ctx, Live{run: rn})
	}
	return nil
}

func (rn *run) replicaCount() int {
	if rn.sc.GateProcess != nil {
		return rn.sc.GateProcess.Replicas
	}
	return 1
}

// The run as its timeline's steps see it (step.Env).

// Client is the simulator's admin client.
func (rn *run) Client() kubernetes.Interface { return rn.client }

// Namespace holds the run's Pods and DaemonSets.
func (rn *run) Namespace() string { return rn.ns }

// Scenario is the scenario the run plays.
func (rn *run) Scenario() *scenario.Scenario { return rn.sc }

// Start is when the run's clock started.
func (rn *run) Start() time.Time { return rn.start }

// State is what the timeline's steps remember.
func (rn *run) State() *step.State { return &rn.state }

// Kubelet is the fake kubelet of the run's nodes.
func (rn *run) Kubelet() step.Kubelet { return rn.kubelet }

// Gate is the gate under test.
func (rn *run) Gate() step.Gate { return rn.harness }

// Recorder is the run's recorder.
func (rn *run) Recorder() step.Recorder { return rn.recorder }

// Autoscaler is the run's Karpenter, as the pauseAutoscaler step stops and continues it
// (nil: no autoscaler, or no such step).
func (rn *run) Autoscaler() step.Autoscaler {
	if rn.autoscale == nil || rn.autoscale.Pause == nil {
		return nil
	}
	return rn.autoscale.Pause
}

// Note records something that happened during the run, for the report.
func (rn *run) Note(format string, args ...any) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if len(rn.notes) < 50 {
		rn.notes = append(rn.notes, fmt.Sprintf("%6.1fs ", time.Since(rn.start).Seconds())+fmt.Sprintf(format, args...))
	}
}

// Fail records an asynchronous error; any makes the run fail.
func (rn *run) Fail(err error) {
	if err == nil {
		return
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if len(rn.errs) < 20 {
		rn.errs = append(rn.errs, err.Error())
	}
}

// Faults is what the run's faults may touch.
func (rn *run) Faults() *faults.Env {
	return &faults.Env{
		Client: rn.client, Writers: rn.writers, Namespace: rn.ns, Scenario: rn.sc, Seed: rn.seed,
		Gate: rn.harness, Plane: rn.Opts.Plane, Ledger: rn.ledger,
		Nodes: rn.state.Nodes, Records: rn.recorder.Snapshot, Note: rn.Note, Fail: rn.Fail, Tally: &rn.tally,
	}
}

// RunRepeated runs every scenario repeat times, repetition i on seed Opts.Seed+i, up to
// parallel runs at once on the shared plane (each isolates itself: namespace, node names,
// scenario label, its own gate and admission objects). A scenario's repetitions run one
// after another (its node names would collide), but no repetition waits for the slowest
// scenario of the one before: a freed slot goes to the next repetition of whichever
// scenario is ready (in the glossary of docs/simulator.md, each scenario is a lane). A soak
// then costs the sum of its runs over parallel, not the sum of every repetition's slowest
// run. Exclusive scenarios run alone, first, every repetition.
// Results come back repetition by repetition, each in input order.
func (r *Runner) RunRepeated(ctx context.Context, scs []*scenario.Scenario, repeat, parallel int) ([]*report.Result, error) {
	results := make([]*report.Result, len(scs)*repeat)
	errs := make([]error, len(results))
	exclusive := func(j int) bool { return scs[j].Exclusive() }
	repeatEach(ctx, len(scs), repeat, parallel, exclusive, func(j, i int) {
		results[i*len(scs)+j], errs[i*len(scs)+j] = r.runSeed(ctx, scs[j], r.Opts.Seed+uint64(i))
	})
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return compact(results), errors.Join(errs...)
}

// repeatEach calls run(j, i) for repetition i of each of n scenarios: the exclusive ones alone
// and first, then the others at most parallel at once, each scenario's repetitions in
// order and never two of one scenario at once. It starts nothing more once ctx is done.
func repeatEach(ctx context.Context, n, repeat, parallel int, exclusive func(j int) bool, run func(j, i int)) {
	for j := 0; j < n; j++ {
		for i := 0; i < repeat && exclusive(j) && ctx.Err() == nil; i++ {
			run(j, i)
		}
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for j := 0; j < n; j++ {
		if exclusive(j) {
			continue
		}
		wg.Go(func() {
			for i := 0; i < repeat && ctx.Err() == nil; i++ {
				sem <- struct{}{}
				run(j, i)
				<-sem
			}
		})
	}
	wg.Wait()
}

// compact drops the runs that never started (an interrupted soak).
func compact(results []*report.Result) []*report.Result {
	out := results[:0]
	for _, res := range results {
		if res != nil {
			out = append(out, res)
		}
	}
	return out
}

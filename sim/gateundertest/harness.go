package gateundertest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/gate/setup"
	"github.com/startupgate/startupgate/internal/freeport"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Harness runs the gate under test for one scenario and is where gate-side faults act.
//
//	apiserver --webhook--> whRelay --> replica webhook servers (in-process or cmd/gate)
//	replicas  --API------> apiRelay --> apiserver
//
// Both relays pass traffic untouched until a fault step tells them otherwise: whRelay can
// refuse, hang or delay admission calls; apiRelay can cut every connection (watch drops).
type Harness struct {
	off       bool // no gate at all
	installed bool // a gate the cluster already runs
	policy    bool // admission by MutatingAdmissionPolicy instead of the webhook
	process   bool // replicas are cmd/gate child processes
	floor     bool // the floor controller instead of the gate
	reactive  bool // no admission at all: the controller alone, tainting by backfill
	cfg       config.Config
	// cfgMu guards cfg's replacement by Reconfigure against Config's readers; reconfMu
	// makes Reconfigures one at a time.
	cfgMu, reconfMu sync.Mutex
	scenario        string
	ns              string
	rc              *rest.Config // admin, direct
	as              *rest.ImpersonationConfig
	cs              kubernetes.Interface
	webhook         scenario.WebhookSettings
	shipped         bool
	args            []string
	run             string

	// nodeWrites counts the in-process gate's successful Node writes; writeAttempts every
	// Node write it sent.
	nodeWrites, writeAttempts atomic.Int64
	// crash is an armed crash point (CrashAtWrite); delays the watch delays by resource
	// (DelayWatches); ctx is the context Start ran under, for the restarts after a crash.
	crash  atomic.Pointer[crashPoint]
	delays sync.Map
	byNode nodeCounts
	ctx    context.Context
	// down are the windows with every replica down, each from the kill to the restart
	// (DownWindows).
	down downWindows

	whRelay  *controlplane.Relay
	apiRelay *controlplane.Relay
	dir      string // certs, kubeconfig, config, logs
	ca       []byte
	replicas []*Replica
	cleanups []func(context.Context) error
}

// Options adjust how the gate under test runs.
type Options struct {
	// As, if set, is the identity the gate's client impersonates (e.g. the deployed
	// ServiceAccount, to prove that its RBAC is enough).
	As *rest.ImpersonationConfig
	// Shipped runs process replicas as deployed: the shipped client limits and leases,
	// connected directly (no relay hop charged to the gate), with the profiler on. The
	// benchmark measures that gate; the suite raises the limits and shortens the leases.
	Shipped bool
	// Args are extra cmd/gate flags for a shipped process replica (the benchmark's
	// comparison of one setting against the shipped default).
	Args []string
	// Run names the run on every line an in-process gate logs ("run": scenario and seed):
	// a soak's runs share one log, and a failure must be traced to its own lines.
	Run string
}

// Replica is one gate instance.
type Replica struct {
	id          int
	port        int
	metricsPort int
	pprofPort   int

	// mu guards what a restart changes: a process replica is restarted by its
	// supervisor while the run may kill, stop or measure it.
	mu sync.Mutex
	// in-process
	cancel context.CancelFunc
	done   chan error // in-process: the manager's error; child: closed when it exits
	// child process
	cmd *exec.Cmd
	// killed: stopped on purpose (Kill, Stop), so not to be restarted.
	killed bool
	// stopped is closed once the last kill's stop is complete: a second kill (a crash point's
	// beside an edit's restart) waits for it, so that nothing starts the replica again while
	// the old one still writes and holds its ports.
	stopped chan struct{}
	// restarts and exitedCPU: the processes that exited on their own, and the CPU they used.
	restarts   int
	exitedCPU  time.Duration
	restartErr error
}

// New prepares the gate under test for scenario sc, whose objects live in namespace ns,
// with gate Config cfg; rc and cs are the plane's admin config and client.
func New(rc *rest.Config, cs kubernetes.Interface, mode Mode, cfg config.Config, sc *scenario.Scenario, ns string, opts Options) *Harness {
	return &Harness{
		off: mode == Off, installed: mode == Installed, floor: mode == Floor, process: sc.GateProcess != nil && mode != Floor,
		policy: mode == Policy || mode == Floor || sc.Admission == "policy", reactive: sc.Admission == "none",
		cfg: cfg, scenario: sc.Name, ns: ns, rc: rc, cs: cs, webhook: sc.Webhook, as: opts.As, shipped: opts.Shipped, args: opts.Args, run: opts.Run,
	}
}

// Off reports whether no gate runs at all (the negative control).
func (h *Harness) Off() bool { return h.off }

// Process reports whether the replicas are cmd/gate child processes.
func (h *Harness) Process() bool { return h.process }

// WebhookRelay is the relay in front of the webhook servers, or nil when nothing is
// served (policy mode without the Pod guard).
func (h *Harness) WebhookRelay() *controlplane.Relay { return h.whRelay }

// APIRelay is the relay between the replicas and the apiserver.
func (h *Harness) APIRelay() *controlplane.Relay { return h.apiRelay }

// NodeWrites is how many Node writes the gate made that the apiserver accepted, or -1 when
// the gate runs as a process (its client is its own).
func (h *Harness) NodeWrites() int64 {
	if h.process || h.floor {
		return -1
	}
	return h.nodeWrites.Load()
}

// Replicas are the gate instances, in start order.
func (h *Harness) Replicas() []*Replica { return h.replicas }

// ID numbers the replica within its harness.
func (r *Replica) ID() int { return r.id }

// Pid is the replica's process id, or 0 when it runs in this process (or has not started).
func (r *Replica) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Restarts is how many times the replica's process exited on its own and was started
// again, and the CPU time those exited processes used.
func (r *Replica) Restarts() (int, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts, r.exitedCPU
}

// MetricsURL is the replica's Prometheus endpoint.
func (r *Replica) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", r.metricsPort)
}

// PprofURL is the replica's profiler (process replicas run as shipped only).
func (r *Replica) PprofURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", r.pprofPort)
}

// Start installs admission (webhook or policy), starts the replicas and returns once a
// dry-run CREATE shows admission tainting a probe node. An installed gate is only waited for.
func (h *Harness) Start(ctx context.Context, replicas int) error {
	if h.off {
		return nil
	}
	h.setContext(ctx)
	if h.installed {
		return WaitAdmission(ctx, h.cs, &h.cfg, h.scenario)
	}
	var err error
	if h.dir, err = os.MkdirTemp("", "startupgate-gate-"); err != nil {
		return err
	}
	u, err := url.Parse(h.rc.Host)
	if err != nil {
		return fmt.Errorf("parsing apiserver address %q: %w", h.rc.Host, err)
	}
	if u.Host == "" {
		return fmt.Errorf("apiserver address %q has no host", h.rc.Host)
	}
	if h.apiRelay, err = controlplane.NewRelay(u.Host); err != nil {
		return err
	}
	h.cfg.Webhook = !h.policy && !h.reactive
	if h.cfg.Webhook || h.cfg.PodGuard {
		if h.ca, err = WriteServingCert(h.dir); err != nil {
			return err
		}
		if h.whRelay, err = controlplane.NewRelay(); err != nil {
			return err
		}
	}
	if replicas < 1 {
		replicas = 1
	}
	var backends []string
	for i := 0; i < replicas; i++ {
		r := &Replica{id: i}
		if r.port, err = freeport.Get(); err != nil {
			return err
		}
		if r.metricsPort, err = freeport.Get(); err != nil {
			return err
		}
		if r.pprofPort, err = freeport.Get(); err != nil {
			return err
		}
		h.replicas = append(h.replicas, r)
		backends = append(backends, fmt.Sprintf("127.0.0.1:%d", r.port))
	}
	if h.whRelay != nil {
		h.whRelay.SetBackends(backends...)
	}
	for _, r := range h.replicas {
		if err := h.Run(ctx, r); err != nil {
			return err
		}
	}
	if err := h.installAdmission(ctx); err != nil {
		return err
	}
	if h.reactive {
		return nil
	}
	return WaitAdmission(ctx, h.cs, &h.cfg, h.scenario)
}

// gateRC is the replicas' client config: through apiRelay, with high limits so that the
// client is never the bottleneck. The benchmark (shipped) connects directly: it injects no
// faults, and a relay hop would be charged to the gate.
func (h *Harness) gateRC() *rest.Config {
	rc := rest.CopyConfig(h.rc)
	if !h.shipped {
		u, _ := url.Parse(rc.Host)
		u.Host = h.apiRelay.Addr()
		rc.Host = u.String()
	}
	rc.QPS, rc.Burst = 1000, 2000
	rc.UserAgent = "startupgate-gate"
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &perturbing{next: rt, h: h} })
	controlplane.LogSlowRequests(rc, ctrllog.Log.WithValues("run", h.run))
	if h.as != nil {
		rc.Impersonate = *h.as
	}
	return rc
}

// Run starts replica r: in-process through setup.NewManager, or as the built cmd/gate. A
// fault restarts a killed replica with it.
func (h *Harness) Run(ctx context.Context, r *Replica) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed = false
	return h.runLocked(ctx, r)
}

// runLocked is Run with r.mu held.
func (h *Harness) runLocked(ctx context.Context, r *Replica) error {
	if h.floor || h.process {
		start := h.runProcess
		if h.floor {
			start = h.runFloorProcess
		}
		if err := start(r); err != nil {
			return err
		}
		go h.supervise(ctx, r, r.cmd, r.done)
		return nil
	}
	mgr, err := h.newManager(ctx, r)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	// The manager's own channel: read from r when it stops, r.done could by then be a later
	// start's, and that start's kill would take this manager's stop for its own.
	done := make(chan error, 1)
	r.cancel, r.done = cancel, done
	go func() { done <- mgr.Start(rctx) }()
	return nil
}

// newManager makes an in-process replica's manager. Making one asks the apiserver what it
// serves, and a fault may cut that request (watch drops, an apiserver restart): it is tried
// again, a few times over some seconds, as a kubelet starts a container again that exited.
func (h *Harness) newManager(ctx context.Context, r *Replica) (manager.Manager, error) {
	for attempt := 1; ; attempt++ {
		mgr, err := setup.NewManager(h.gateRC(), ptr.To(h.cfg), setup.ManagerOptions{
			Logger:                 ctrllog.Log.WithValues("run", h.run, "replica", r.id),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: r.port, CertDir: h.dir}),
			// Every scenario starts a fresh gate in this process.
			Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		}, setup.Options{})
		if err == nil || attempt == 10 {
			return mgr, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(restartDelay):
		}
	}
}

func (h *Harness) runProcess(r *Replica) error {
	bin, err := GateBinary()
	if err != nil {
		return err
	}
	kc, cfgFile, err := h.writeGateFiles()
	if err != nil {
		return err
	}
	args := []string{"--config", cfgFile,
		fmt.Sprintf("--webhook-port=%d", r.port), "--cert-dir", h.dir,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", r.metricsPort), "--health-probe-bind-address=0",
		"--leader-elect=true", "--leader-election-namespace=" + h.ns}
	if h.shipped {
		// The gate as deployed: shipped leases and client limits, plus the profiler.
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", r.pprofPort))
		args = append(args, h.args...)
	} else {
		// Short leases so a failover fits in a scenario (the defaults are 15s/10s/2s), and
		// limits high enough that the client is never what a scenario measures.
		args = append(args, "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			"--kube-api-qps=1000", "--kube-api-burst=2000")
	}
	return h.startChild(r, exec.Command(bin, args...), "KUBECONFIG="+kc)
}

// restartDelay is how long a process replica that exited stays down: about the time a
// kubelet takes to start a container again, before its crash-loop back-off grows.
const restartDelay = time.Second

// supervise restarts a process replica (the gate's, or the floor's) that exits on its own,
// as the kubelet restarts a Deployment's container (restartPolicy Always). The gate exits
// when it loses its lease — on a saturated apiserver a renewal can miss its deadline, and
// the suite's leases are short — and a gate as deployed is restarted then: without it, a
// scenario or a benchmark burst leaves the nodes the lost leader had not released tainted
// for good. A replica killed on purpose (Kill, Stop) stays down until the fault restarts
// it. cmd and done are the process this call watches; a failed restart is an error of the
// run, which Stop returns.
func (h *Harness) supervise(ctx context.Context, r *Replica, cmd *exec.Cmd, done chan error) {
	select {
	case <-ctx.Done():
		return
	case <-done: //nolint:errcheck // the exit status is in cmd.ProcessState, which a failed restart reports
	}
	r.mu.Lock()
	if r.killed || r.cmd != cmd {
		r.mu.Unlock()
		return
	}
	r.restarts++
	if st := cmd.ProcessState; st != nil {
		r.exitedCPU += st.UserTime() + st.SystemTime()
	}
	r.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-time.After(restartDelay):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed || r.cmd != cmd {
		return
	}
	if err := h.runLocked(ctx, r); err != nil {
		r.restartErr = fmt.Errorf("restarting after it exited (%v): %w", cmd.ProcessState, err)
	}
}

// runFloorProcess starts the floor controller as a child process: this very binary,
// re-executed with floorChildEnv set (RunFloorChild takes over there). The floor then has a
// process of its own, as the gate has, and does not compete with the simulator's own work.
func (h *Harness) runFloorProcess(r *Replica) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	kc, cfgFile, err := h.writeGateFiles()
	if err != nil {
		return err
	}
	return h.startChild(r, exec.Command(self), floorChildEnv+"="+strings.Join([]string{kc, cfgFile, h.scenario, h.ns}, ","))
}

// writeGateFiles writes the replicas' kubeconfig and gate Config into the harness dir.
func (h *Harness) writeGateFiles() (kubeconfig, cfgFile string, err error) {
	kubeconfig, cfgFile = filepath.Join(h.dir, "kubeconfig"), filepath.Join(h.dir, "config.yaml")
	if err := controlplane.WriteKubeconfig(h.gateRC(), kubeconfig); err != nil {
		return "", "", err
	}
	raw, err := yaml.Marshal(h.cfg)
	if err != nil {
		return "", "", err
	}
	return kubeconfig, cfgFile, os.WriteFile(cfgFile, raw, 0o600)
}

// startChild starts cmd as replica r, its output passed to the simulator's log under the
// run and replica (childLog); it dies with us.
func (h *Harness) startChild(r *Replica, cmd *exec.Cmd, env ...string) error {
	out := &childLog{log: ctrllog.Log.WithValues("run", h.run, "replica", r.id)}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", filepath.Base(cmd.Path), err)
	}
	done := make(chan error)
	r.cmd, r.done = cmd, done
	go func() { _ = cmd.Wait(); out.Close(); close(done) }()
	return nil
}

// Kill stops a replica abruptly: SIGKILL for a process (no lease release, no cleanup — the
// crash the gate must survive), context cancel for in-process.
func (h *Harness) Kill(r *Replica) {
	_ = h.kill(r)
}

// kill is Kill, returning an in-process replica's error from its manager.
func (h *Harness) kill(r *Replica) error {
	r.mu.Lock()
	cmd, cancel, done, stopped := r.cmd, r.cancel, r.done, r.stopped
	r.killed = true
	if cmd == nil && cancel == nil {
		r.mu.Unlock()
		if stopped != nil {
			<-stopped
		}
		return nil
	}
	stopped = make(chan struct{})
	r.cmd, r.cancel, r.stopped = nil, nil, stopped
	r.mu.Unlock()
	defer close(stopped)
	switch {
	case cmd != nil:
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // killed on purpose: its "signal: killed" is no failure of the run
	case cancel != nil:
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(slowStop):
		}
		// Still stopping: whatever holds the manager up is still there to be seen. Without
		// this, a stop that outlives the grace period says only that it did.
		where := stacksOfSlowStop()
		if err := <-done; err != nil {
			return fmt.Errorf("%w; %s", err, where)
		}
	}
	return nil
}

// slowStop is how long an in-process replica may take to stop before its goroutines are
// written down. A healthy stop takes about a second; the manager's grace period is 30s.
const slowStop = 10 * time.Second

// stacksOfSlowStop writes every goroutine's stack to a file and returns where, with the
// first stack that is in the middle of a reconcile (the usual culprit), for a test log.
func stacksOfSlowStop() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	where := "goroutine stacks: not written"
	if f, err := os.CreateTemp("", "startupgate-slow-stop-*.txt"); err == nil {
		_, _ = f.Write(buf.Bytes())
		_ = f.Close()
		where = fmt.Sprintf("goroutine stacks %s after the stop: %s", slowStop, f.Name())
	}
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, "reconcileHandler") {
			return where + "; a reconcile still running:\n" + g
		}
	}
	return where
}

// LeaderWait is how long WaitLeader waits: about the shipped lease duration and retry
// period together.
const LeaderWait = 20 * time.Second

// WaitLeader waits up to LeaderWait for a process replica to hold the lease, and returns it.
func (h *Harness) WaitLeader(ctx context.Context) (*Replica, error) {
	return h.WaitLeaderWithin(ctx, LeaderWait)
}

// WaitLeaderWithin waits up to within for a process replica to hold the lease, and returns
// it. A replica runs for the lease only once its cache holds the init Pods, which on a
// plane of tens of thousands of nodes takes longer than LeaderWait.
func (h *Harness) WaitLeaderWithin(ctx context.Context, within time.Duration) (*Replica, error) {
	var r *Replica
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		r = h.leader(ctx)
		return r != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no gate replica is leader: %w", err)
	}
	return r, nil
}

// leader is the replica whose metrics say it holds the lease, or nil.
func (h *Harness) leader(ctx context.Context) *Replica {
	for _, r := range h.replicas {
		if r.Pid() == 0 {
			continue
		}
		if isLeader(ctx, r.metricsPort) {
			return r
		}
	}
	return nil
}

func isLeader(ctx context.Context, port int) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
			return true
		}
	}
	return false
}

// installAdmission registers the shipped webhook configuration(s), pointed at whRelay, or
// the admission policy.
func (h *Harness) installAdmission(ctx context.Context) error {
	api := h.cs.AdmissionregistrationV1()
	name := "startupgate-" + h.scenario
	if h.cfg.Webhook {
		addr := h.whRelay.Addr()
		if h.shipped {
			addr = fmt.Sprintf("127.0.0.1:%d", h.replicas[0].port) // no relay hop in admission latency
		}
		wh, err := webhookConfig(&h.cfg, h.scenario, "https://"+addr+gate.NodeWebhookPath, h.ca)
		if err != nil {
			return err
		}
		if fp := h.webhook.FailurePolicy; fp != "" {
			wh.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType(fp))
		}
		if ts := h.webhook.TimeoutSeconds; ts > 0 {
			wh.Webhooks[0].TimeoutSeconds = ptr.To(ts)
		}
		if err := install(ctx, h, api.MutatingWebhookConfigurations(), wh.Name, wh, "webhook configuration"); err != nil {
			return err
		}
	} else if !h.reactive {
		objs, err := policy.For(&h.cfg)
		if err != nil {
			return err
		}
		for _, o := range objs {
			// One policy and binding per rule, named for the scenario.
			n := strings.Replace(o.Policy.Name, policy.Name, name, 1)
			o.Policy.Name, o.Binding.Name, o.Binding.Spec.PolicyName = n, n, n
			if err := install(ctx, h, api.MutatingAdmissionPolicies(), n, o.Policy, "admission policy"); err != nil {
				return err
			}
			if err := install(ctx, h, api.MutatingAdmissionPolicyBindings(), n, o.Binding, "admission policy binding"); err != nil {
				return err
			}
		}
	}
	if h.cfg.PodGuard {
		vw, err := podGuardConfig(h.scenario, "https://"+h.whRelay.Addr()+gate.PodGuardPath, h.ca)
		if err != nil {
			return err
		}
		if err := install(ctx, h, api.ValidatingWebhookConfigurations(), vw.Name, vw, "pod guard"); err != nil {
			return err
		}
	}
	return nil
}

// createDeleter is what client-go's typed clients of the admission objects have in common.
type createDeleter[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// install creates obj, named name, in place of a leftover of an earlier run, and registers
// its removal with Stop (which removes in reverse order: a binding before its policy).
func install[T any](ctx context.Context, h *Harness, c createDeleter[T], name string, obj T, what string) error {
	_ = c.Delete(ctx, name, metav1.DeleteOptions{})
	if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("installing %s %s: %w", what, name, err)
	}
	h.cleanups = append(h.cleanups, func(ctx context.Context) error {
		return ignoreNotFound(c.Delete(ctx, name, metav1.DeleteOptions{}))
	})
	return nil
}

// Stop removes admission first (so the apiserver stops calling the gate), then stops the
// replicas and the relays, then removes the files.
func (h *Harness) Stop(ctx context.Context) error {
	var errs []error
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, h.cleanups[i](ctx))
	}
	h.cleanups = nil
	for _, r := range h.replicas {
		err := h.kill(r)
		r.mu.Lock()
		err = errors.Join(err, r.restartErr)
		r.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("gate replica %d: %w", r.id, err))
		}
	}
	for _, p := range []*controlplane.Relay{h.whRelay, h.apiRelay} {
		if p != nil {
			p.Close(ctx)
		}
	}
	if h.dir != "" {
		errs = append(errs, os.RemoveAll(h.dir))
	}
	return errors.Join(errs...)
}

// podGuardConfig loads the shipped pod guard ValidatingWebhookConfiguration and scopes it to
// the scenario's namespace.
func podGuardConfig(name, url string, ca []byte) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	vw := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := loadManifest("overlays/pod-guard/pod-guard.yaml", vw); err != nil {
		return nil, err
	}
	if len(vw.Webhooks) != 1 {
		return nil, fmt.Errorf("pod-guard.yaml: want one webhook, found %d", len(vw.Webhooks))
	}
	vw.Name = "startupgate-pod-guard-" + name
	w := &vw.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{scenario.Label: name}}
	return vw, nil
}

var (
	gateBinOnce sync.Once
	gateBin     string
	gateBinErr  error
)

// GateBinary is the cmd/gate binary for process-mode scenarios: $STARTUPGATE_GATE_BINARY
// if set (the Makefile passes the one it built, so that make test compiles the gate once
// for every test that runs it), else built once per process from this module, as `make
// build` and the image build it (static, -trimpath, stripped).
func GateBinary() (string, error) {
	gateBinOnce.Do(func() {
		if p := os.Getenv("STARTUPGATE_GATE_BINARY"); p != "" {
			gateBin = p
			return
		}
		dir, err := os.MkdirTemp("", "startupgate-bin-")
		if err != nil {
			gateBinErr = err
			return
		}
		gateBin = filepath.Join(dir, "gate")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", gateBin, "github.com/startupgate/startupgate/cmd/gate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			gateBinErr = fmt.Errorf("building cmd/gate: %w: %s", err, out)
		}
	})
	return gateBin, gateBinErr
}

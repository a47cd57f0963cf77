package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/kubelet"
)

// The large-cluster phase (`simulate bench --large`, `make bench-large`): the gate on a
// plane that already holds thousands of registered, released cloud-sized Nodes, each with
// its init Pod, against the same figures on the empty plane in the same run.
//
// Sizes run in increasing order on one plane, the empty plane first; the plane is filled
// up to each size in turn (never emptied), so one run measures every size. At each size:
//
//	a gate (policy) burst: before its nodes join, the fresh gate's start to its initial
//	list reconciled, its heap and RSS, its CPU while idle, and its CPU per Node status
//	update; then the burst's release latency and stages;
//	a floor burst, the plane's own latency at that size (optional);
//	a leader failover: two replicas, the leader killed as nodes join; from its exit to
//	the first release by the other.
//
// The static nodes send no heartbeats: the controller-manager's node-monitor grace period
// is raised so that the plane holds them Ready, and a real kubelet's periodic status is
// priced once per size instead (the update cost, not a live stream of them).

// LargeOptions shape the large-cluster phase.
type LargeOptions struct {
	// Sizes are the static node counts, default 10000 and 50000; the empty plane (0) is
	// always measured first.
	Sizes []int
	// Burst is how many nodes join on top at each size; default 1000. Workloads is how
	// many workload Pods wait for them (default Burst/10: a workload Pod costs the
	// scheduler a pass over every node, static ones included, and the figure sought is the
	// gate's, not the scheduler's).
	Burst, Workloads int
	// Failover is how many nodes join in the failover run; default 200 (0 below: default).
	Failover int
	// Idle is how long the gate's idle CPU is read; default 60s.
	Idle time.Duration
	// Updates is how many static nodes report their status once, to price a Node update
	// in the gate; default 5000 (at most the size).
	Updates int
	// NoFloor leaves the floor bursts out.
	NoFloor bool
	// BeforeGate, if set, is a gate binary to probe beside the one under test at every size
	// (start to synced, memory, idle CPU, update cost; a 10-node burst): a change's
	// figures before and after, in one run. It needs STARTUPGATE_GATE_BINARY set.
	BeforeGate string
	// Profile is the static nodes' shape; default kubelet.DefaultProfile.
	Profile *kubelet.NodeProfile
	Seed    uint64
	// Progress receives live lines (nil: quiet).
	Progress io.Writer
	// LogDir keeps the plane's and the gate's logs; a temp dir if empty.
	LogDir string
}

func largeDefaults(o LargeOptions) LargeOptions {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{10000, 50000}
	}
	o.Sizes = append([]int{0}, o.Sizes...)
	slices.Sort(o.Sizes)
	o.Sizes = slices.Compact(o.Sizes)
	if o.Burst <= 0 {
		o.Burst = 1000
	}
	if o.Workloads <= 0 {
		o.Workloads = max(1, o.Burst/10)
	}
	if o.Failover <= 0 {
		o.Failover = 200
	}
	if o.Idle <= 0 {
		o.Idle = time.Minute
	}
	if o.Updates <= 0 {
		o.Updates = 5000
	}
	if o.Profile == nil {
		p := kubelet.DefaultProfile()
		o.Profile = &p
	}
	return o
}

// largeGrace is the controller-manager's node-monitor grace period in the large phase:
// longer than any run, so that static nodes without heartbeats stay Ready.
const largeGrace = 24 * time.Hour

// largeMonitorPeriod is the controller-manager's node-monitor period in the large phase.
// Each pass deep-copies every Node's status: at 50,000 static nodes a pass takes about 15 s
// of a core, which once a minute was a quarter of a core, taken from the apiserver during
// the fill and, when a pass fell inside a gate's start, counted against the gate's time. With
// a grace period of a day no node's health can change within a run, and the not-ready
// taint that a joining node loses is removed on its update event, not by the pass.
const largeMonitorPeriod = 5 * time.Minute

// etcdQuota is the etcd backend quota of the large phase. etcd's default, 2 GiB, is about
// what 50,000 cloud-sized Nodes with their history and Pods take before compaction; etcd
// reads its flags from ETCD_* variables (largeEnv).
const etcdQuota = "8589934592"

// largeGOGC is the garbage collector's target of the plane's processes and of this one in
// the large phase. At Go's default, 100, a process's heap may grow to twice what is live
// before a collection; the apiserver, the controller-manager and the scheduler each hold
// every Node and Pod, and at that default this machine's memory ran out with the plane
// at 39,000 cloud-sized nodes, short of 50,000. The gate under test keeps the default.
const largeGOGC = 50

// largeEnv is the plane's environment in the large phase: largeGOGC and etcdQuota, each
// unless this process's environment already sets it.
func largeEnv() []string {
	var env []string
	for _, kv := range [][2]string{{"GOGC", strconv.Itoa(largeGOGC)}, {"ETCD_QUOTA_BACKEND_BYTES", etcdQuota}} {
		if os.Getenv(kv[0]) == "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

// RunLarge starts an embedded plane and runs the large-cluster phase on it.
func RunLarge(ctx context.Context, opts LargeOptions) (*LargeReport, error) {
	opts = largeDefaults(opts)
	dir, err := os.MkdirTemp("", "startupgate-bench-large-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	audit := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	swap, err := gateSwap(dir, opts.BeforeGate)
	if err != nil {
		return nil, err
	}
	apiArgs := map[string]string{
		"audit-policy-file": filepath.Join(dir, "audit-policy.yaml"), "audit-log-path": audit,
		"audit-log-maxsize": "100000",
	}
	plane := &controlplane.Embedded{LogDir: opts.LogDir, APIServerArgs: apiArgs, NodeMonitorPeriod: largeMonitorPeriod, Env: largeEnv()}
	if os.Getenv("GOGC") == "" { // this process's informers grow with the plane as well
		defer debug.SetGCPercent(debug.SetGCPercent(largeGOGC))
	}
	defer func() { _ = plane.Stop() }()
	rc, err := plane.Start(ctx)
	if err != nil {
		return nil, err
	}
	if err := plane.SetNodeMonitorGracePeriod(largeGrace); err != nil {
		return nil, err
	}
	// The bench's own client creates the static init Pods, tens of thousands of them: not
	// at client-go's default 5 requests a second.
	fast := rest.CopyConfig(rc)
	fast.QPS, fast.Burst = -1, 0
	controlplane.Protobuf(fast)
	cs, err := kubernetes.NewForConfig(fast)
	if err != nil {
		return nil, err
	}
	rep := &LargeReport{Machine: machine(), Burst: opts.Burst, Workloads: opts.Workloads, FailoverNodes: opts.Failover,
		IdleS: opts.Idle.Seconds(), Profile: *opts.Profile, Plane: largePlaneSettings(apiArgs)}
	b := &bench{opts: Options{Seed: opts.Seed, Progress: opts.Progress, LogDir: opts.LogDir}, rc: rc, cs: cs, audit: audit,
		rep:     &Report{Pairs: map[string][]Pair{}, BreakdownMS: map[string]Breakdown{}, ReleaseLatencyMS: map[string]check.Percentiles{}},
		samples: map[string][]sample{}, gateStages: map[string]map[string]Quantiles{}, largest: -1}
	lg := &large{bench: b, opts: opts, rep: rep, swap: swap}
	runErr := lg.sizes(ctx)
	auditErr := b.fromAudit()
	rep.Runs = b.rep.Runs
	rep.Breakdowns = b.rep.BreakdownMS
	if runErr != nil {
		return rep, runErr
	}
	return rep, auditErr
}

// largePlaneSettings lists every setting the large phase gives the plane, for the report.
func largePlaneSettings(api map[string]string) []string {
	out := []string{
		"etcd --quota-backend-bytes=" + etcdQuota + " (ETCD_QUOTA_BACKEND_BYTES, unless already set)",
		fmt.Sprintf("GOGC=%d for etcd, the apiserver, the scheduler, the controller-manager and the simulator, unless already set; the gate keeps Go's default", largeGOGC),
		"kube-controller-manager --node-monitor-grace-period=" + largeGrace.String() + " (static nodes send no heartbeats)",
		"kube-controller-manager --node-monitor-period=" + largeMonitorPeriod.String() + " (its default is 5s, the suite's plane runs 1s)",
		"kube-apiserver --max-requests-inflight=2000 --max-mutating-requests-inflight=1000 --delete-collection-workers=8 (the embedded plane's own)",
	}
	for _, k := range sortedKeys(api) {
		if k == "audit-policy-file" || k == "audit-log-path" {
			continue
		}
		out = append(out, fmt.Sprintf("kube-apiserver --%s=%s", k, api[k]))
	}
	return append(out, "kube-apiserver audit log at Metadata level (for the stage breakdown)")
}

// large is one run of the large phase.
type large struct {
	*bench
	opts   LargeOptions
	rep    *LargeReport
	static *staticNodes
	// swap installs the before (true) or the after (false) gate binary; nil: no before.
	swap func(before bool) error
}

// sizes runs every size in order, filling the plane up to each.
func (lg *large) sizes(ctx context.Context) error {
	for _, n := range lg.opts.Sizes {
		sz := LargeSize{Nodes: n}
		if n > 0 {
			if err := lg.fill(ctx, n, &sz); err != nil {
				lg.rep.Sizes = append(lg.rep.Sizes, sz)
				if errors.Is(err, errMemoryLow) {
					// What broke first: a finding for the report, not a failed run.
					lg.progress("large: %v; no larger size runs", err)
					return nil
				}
				return fmt.Errorf("filling the plane to %d nodes: %w", n, err)
			}
		}
		err := lg.measure(ctx, &sz)
		lg.rep.Sizes = append(lg.rep.Sizes, sz)
		if err != nil {
			return fmt.Errorf("at %d static nodes: %w", n, err)
		}
	}
	return nil
}

// measure runs the size's bursts and failover.
func (lg *large) measure(ctx context.Context, sz *LargeSize) error {
	settled, err := lg.settle(ctx)
	if err != nil {
		return err
	}
	sz.SettleS = round2(settled.Seconds())
	if sz.Nodes == 0 {
		if sz.Warmup, err = lg.warmup(ctx); err != nil {
			return err
		}
	}
	probe := &gateProbe{static: sz.Nodes, idle: lg.opts.Idle, updates: min(lg.opts.Updates, sz.Nodes), nodes: lg.staticNames(),
		heapProfile: lg.profilePath(fmt.Sprintf("bench-large-gate-heap-%d.pprof", sz.Nodes)),
		cpuProfile:  lg.startProfilePath("gate", sz.Nodes)}
	l := lg.burst(sz.Nodes)
	l.mode, l.probe = benchPolicy, probe
	g, err := lg.run(ctx, l, nil)
	if err != nil {
		return err
	}
	sz.Gate = burstOf(g)
	probe.into(&sz.GateFigures, &sz.Errors)
	lg.breakdownOf(fmt.Sprintf("%d-node burst on %d static nodes, policy gate", lg.opts.Burst, sz.Nodes), g.Name)
	if !lg.opts.NoFloor {
		l.mode, l.probe = benchFloor, nil
		f, err := lg.run(ctx, l, nil)
		if err != nil {
			return err
		}
		sz.Floor = burstOf(f)
	}
	if lg.swap != nil {
		if err := lg.before(ctx, sz); err != nil {
			return err
		}
	}
	sz.Failover, err = lg.failover(ctx, sz.Nodes, false)
	return err
}

// burst is the size's burst load, its mode unset: the gate's, the floor's and the warm-up's.
func (lg *large) burst(static int) load {
	return load{large: true, nodes: lg.opts.Burst, jitter: time.Second, static: static, workloads: lg.opts.Workloads}
}

// warmup runs one burst of the floor's, not measured, on the freshly started plane before
// the empty plane's figures. The first burst a plane serves pays for its start: its watch
// caches grow to the burst's rate of events, and its clients' watches are closed and
// opened again meanwhile. Without it the gate's burst, run first, bore that cost, and its
// p99 on the empty plane is the baseline of every populated/empty ratio of the gate's
// (docs/performance.md says by how much).
func (lg *large) warmup(ctx context.Context) (*Burst, error) {
	l := lg.burst(0)
	l.mode, l.warmup = benchFloor, true
	r, err := lg.run(ctx, l, nil)
	if err != nil {
		return nil, fmt.Errorf("warming the plane up: %w", err)
	}
	return burstOf(r), nil
}

// failover runs two replicas, kills the leader as nodes join, and times the other's
// takeover; before runs them as the before gate's replicas.
func (lg *large) failover(ctx context.Context, static int, before bool) (*Failover, error) {
	fo := &failoverProbe{}
	l := load{large: true, before: before, mode: benchPolicy, nodes: lg.opts.Failover, jitter: time.Second, static: static,
		workloads: max(1, lg.opts.Failover/10), replicas: 2, failover: fo, probe: &gateProbe{static: static}}
	r, err := lg.run(ctx, l, nil)
	if err != nil {
		return nil, err
	}
	return fo.result(r), nil
}

// before probes the before gate as the gate under test was: its own 10-node run, then
// its failover.
func (lg *large) before(ctx context.Context, sz *LargeSize) error {
	// After the bursts' clean-up, as after the fill: the gate under test was probed on a
	// quiet plane, and so is this one.
	if _, err := lg.settle(ctx); err != nil {
		return err
	}
	if err := lg.swap(true); err != nil {
		return err
	}
	probe := &gateProbe{static: sz.Nodes, idle: lg.opts.Idle, updates: min(lg.opts.Updates, sz.Nodes), nodes: lg.staticNames(),
		heapProfile: lg.profilePath(fmt.Sprintf("bench-large-before-heap-%d.pprof", sz.Nodes)),
		cpuProfile:  lg.startProfilePath("before", sz.Nodes)}
	_, err := lg.run(ctx, load{large: true, before: true, mode: benchPolicy, nodes: 10, jitter: time.Second, static: sz.Nodes, workloads: 1, probe: probe}, nil)
	if err == nil {
		sz.BeforeFailover, err = lg.failover(ctx, sz.Nodes, true)
	}
	if serr := lg.swap(false); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	sz.Before = &GateFigures{}
	probe.into(sz.Before, &sz.Errors)
	return nil
}

// gateSwap arranges for the gate under test and a before binary to take turns at one
// path, which STARTUPGATE_GATE_BINARY then names: the harness reads that variable once,
// and every run starts its processes afresh from the path. A rename replaces the file
// atomically; a process already running keeps its own.
func gateSwap(dir, before string) (func(bool) error, error) {
	if before == "" {
		return nil, nil
	}
	after := os.Getenv("STARTUPGATE_GATE_BINARY")
	if after == "" {
		return nil, fmt.Errorf("a before gate needs STARTUPGATE_GATE_BINARY to name the gate under test")
	}
	path := filepath.Join(dir, "gate")
	install := func(src string) error {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path+".new", data, 0o755); err != nil {
			return err
		}
		return os.Rename(path+".new", path)
	}
	if err := install(after); err != nil {
		return nil, err
	}
	if err := os.Setenv("STARTUPGATE_GATE_BINARY", path); err != nil {
		return nil, err
	}
	return func(b bool) error {
		if b {
			return install(before)
		}
		return install(after)
	}, nil
}

// startProfilePath is where the CPU profile of a gate's start at static nodes goes; none
// on the empty plane, whose gate starts in under a second.
func (lg *large) startProfilePath(gate string, static int) string {
	if static == 0 {
		return ""
	}
	return lg.profilePath(fmt.Sprintf("bench-large-%s-start-%d.pprof", gate, static))
}

// profilePath is where a profile of that name goes: the log directory, if one is kept.
func (lg *large) profilePath(name string) string {
	if lg.opts.LogDir == "" {
		return ""
	}
	return filepath.Join(lg.opts.LogDir, name)
}

func (lg *large) staticNames() []string {
	if lg.static == nil {
		return nil
	}
	return lg.static.names
}

func burstOf(r *RunResult) *Burst {
	return &Burst{Run: r.Name, Nodes: r.Nodes, Released: r.Released, P50: r.LatencyMS.P50, P99: r.LatencyMS.P99, Passed: r.Passed}
}

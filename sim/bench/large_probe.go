package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/gateundertest"
)

// gateProbe reads a fresh gate on a plane of static nodes, before the first join: the
// time from its process start to its initial list reconciled, its memory, its idle CPU,
// and what a Node status update costs it.
type gateProbe struct {
	static  int
	idle    time.Duration
	updates int
	nodes   []string
	// heapProfile, if set, is where the synced gate's heap profile goes: what its heap
	// holds, for the question of what grows.
	heapProfile string
	// cpuProfile, if set, is where a CPU profile of the gate's first startProfile goes:
	// what its start spends, for the question of why it takes as long as it does.
	cpuProfile string
	// baseline is the gate's metrics scraped just before the first join: the burst's
	// stage histograms are taken from there.
	baseline []byte

	// setupSettle is how long the plane took to go quiet after the run's setup, before the
	// gate started; setupCPU the plane's CPU readings then, from which syncPlaneCPU is
	// what each process spent while the gate started.
	setupSettle  time.Duration
	setupCPU     map[string]float64
	syncPlaneCPU map[string]float64

	syncS          float64
	syncCPUS       float64
	heap, live     uint64
	rss            uint64
	idleCPUS       float64
	idlePlaneCPU   map[string]float64
	updated        int
	updateCPUS     float64
	updateElapsedS float64
	err            error
}

// startedTimeout bounds the probe's wait for the gate's initial list.
const startedTimeout = 10 * time.Minute

// started runs as the run's Started hook. A failure is kept for the report (the run goes
// on: its burst is still worth measuring).
func (p *gateProbe) started(ctx context.Context, live sim.Live, fo *failoverProbe, progress func(string, ...any)) {
	profiled := make(chan struct{})
	if reps := live.Gate().Replicas(); p.cpuProfile != "" && len(reps) > 0 {
		go func() {
			defer close(profiled)
			p.profileStart(ctx, reps[0], progress)
		}()
	} else {
		close(profiled)
	}
	r, err := live.Gate().WaitLeaderWithin(ctx, startedTimeout)
	if err == nil {
		err = p.sync(ctx, r)
	}
	<-profiled // before the idle window: a profile of an idle process would be empty anyway
	if err == nil {
		progress("large: gate synced %d static nodes in %.1fs", p.static, p.syncS)
	}
	if err == nil && p.idle > 0 {
		err = p.measureIdle(ctx, r, live)
	}
	if err == nil && p.updates > 0 {
		err = p.priceUpdates(ctx, r, live)
	}
	if err == nil {
		p.baseline, err = httpGet(ctx, r.MetricsURL())
	}
	p.err = err
	if err != nil {
		progress("large: gate probe: %v", err)
	}
	if fo != nil {
		go fo.kill(ctx, live, progress)
	}
}

// beforeGate runs as the run's BeforeGate hook: the run's new DaemonSet and workloads send
// its scheduler and controller-manager over every Node, and a gate started meanwhile
// measures that as much as its own start; on a plane of static nodes it grows with their
// number. So the gate starts once the plane is quiet again.
func (p *gateProbe) beforeGate(progress func(string, ...any)) func(context.Context) error {
	return func(ctx context.Context) error {
		var err error
		p.setupSettle, err = settle(ctx, progress)
		p.setupCPU = processesCPU()
		return err
	}
}

// startProfile is how long the CPU profile of a gate's start runs: about a start at 50,000
// static nodes. After a shorter start the probe waits for the profile's end.
const startProfile = 30 * time.Second

// profileStart saves a CPU profile of r's start, asked for as soon as its profiler
// answers.
func (p *gateProbe) profileStart(ctx context.Context, r *gateundertest.Replica, progress func(string, ...any)) {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, startedTimeout, true, func(ctx context.Context) (bool, error) {
		return saveCPUProfile(ctx, r, startProfile, p.cpuProfile) == nil, nil
	})
	if err != nil {
		progress("large: the gate's start profile: %v", err)
	}
}

// syncPoll is how often sync reads the gate's metrics: each read costs the gate an
// encoding of all of them, which at 10 a second was 7 % of its CPU while it started.
const syncPoll = 250 * time.Millisecond

// sync waits until the gate has reconciled every static node without an error and its
// queue is empty, and times that from the process's start; it also reads the gate's CPU
// until then, and the plane's since beforeGate.
func (p *gateProbe) sync(ctx context.Context, r *gateundertest.Replica) error {
	began, err := processStart(r.Pid())
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, syncPoll, startedTimeout, true, func(ctx context.Context) (bool, error) {
		raw, err := httpGet(ctx, r.MetricsURL())
		if err != nil {
			return false, nil //nolint:nilerr // a gate still starting answers later
		}
		// A gate that gives up its start drains its queue in errors as it stops; those
		// reconciles read nothing and do not count.
		done, _ := metricSum(raw, "controller_runtime_reconcile_total", map[string]string{"controller": "startupgate"})
		failed, _ := metricSum(raw, "controller_runtime_reconcile_total", map[string]string{"controller": "startupgate", "result": "error"})
		depth, _ := metricSum(raw, "workqueue_depth", map[string]string{"name": "startupgate"})
		return int(done-failed) >= p.static && depth == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the gate to reconcile %d static nodes: %w", p.static, err)
	}
	p.syncS = round2(time.Since(began).Seconds())
	cpu, err := processCPU(r.Pid())
	p.syncCPUS = round2(cpu)
	if p.setupCPU != nil {
		p.syncPlaneCPU = cpuSpent(p.setupCPU, processesCPU())
	}
	return err
}

// measureIdle reads the gate's memory after a forced GC, then its CPU (and the plane's)
// over the idle window: no joins, no Node updates.
func (p *gateProbe) measureIdle(ctx context.Context, r *gateundertest.Replica, _ sim.Live) error {
	m, err := gateMemory(ctx, r)
	if err != nil {
		return err
	}
	p.heap, p.live, p.rss = m.heap, m.live, m.rss
	if p.heapProfile != "" {
		raw, err := httpGet(ctx, r.PprofURL()+"/heap")
		if err == nil {
			err = os.WriteFile(p.heapProfile, raw, 0o644)
		}
		if err != nil {
			return fmt.Errorf("saving the gate's heap profile: %w", err)
		}
	}
	cpu0, err := processCPU(r.Pid())
	if err != nil {
		return err
	}
	plane0 := processesCPU()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(p.idle):
	}
	cpu1, err := processCPU(r.Pid())
	if err != nil {
		return err
	}
	p.idleCPUS = round2(cpu1 - cpu0)
	p.idlePlaneCPU = cpuSpent(plane0, processesCPU())
	return nil
}

// priceUpdates has static nodes report their status once, as a kubelet does every five
// minutes though nothing changed (a heartbeat in the Ready condition), and reads the gate's
// CPU over it: what a live cluster's status reports cost it. Its idle CPU over the same
// time is taken off.
func (p *gateProbe) priceUpdates(ctx context.Context, r *gateundertest.Replica, live sim.Live) error {
	names := p.nodes[:min(p.updates, len(p.nodes))]
	cpu0, err := processCPU(r.Pid())
	if err != nil {
		return err
	}
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(32)
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		g.Go(func() error {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"lastHeartbeatTime":%q}]}}`,
				corev1.NodeReady, time.Now().UTC().Format(time.RFC3339))
			_, err := live.Client().CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("reporting the status of %d static nodes: %d failed, the first: %w", len(names), len(errs), errs[0])
	}
	// The gate's informer is behind the writes by a watch delivery: give it time to drain.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
	}
	cpu1, err := processCPU(r.Pid())
	if err != nil {
		return err
	}
	elapsed := time.Since(start).Seconds()
	idleRate := 0.0
	if p.idle > 0 {
		idleRate = p.idleCPUS / p.idle.Seconds()
	}
	p.updated, p.updateElapsedS = len(names), round2(elapsed)
	p.updateCPUS = max(0, cpu1-cpu0-idleRate*elapsed)
	return nil
}

// into writes the probe's figures, and its error if it failed.
func (p *gateProbe) into(sz *GateFigures, errs *[]string) {
	sz.SyncS, sz.HeapBytes, sz.HeapLiveBytes, sz.RSSBytes = p.syncS, p.heap, p.live, p.rss
	sz.SetupSettleS, sz.SyncCPUS, sz.SyncPlaneCPUS = round2(p.setupSettle.Seconds()), p.syncCPUS, p.syncPlaneCPU
	if p.idle > 0 && p.heap > 0 {
		sz.IdleCPUPct = round2(p.idleCPUS / p.idle.Seconds() * 100)
		sz.IdlePlaneCPUPct = map[string]float64{}
		for k, v := range p.idlePlaneCPU {
			sz.IdlePlaneCPUPct[k] = round2(v / p.idle.Seconds() * 100)
		}
	}
	if p.updated > 0 {
		sz.Updates = p.updated
		sz.UpdateCPUMSPer1000 = round2(p.updateCPUS / float64(p.updated) * 1000 * 1000)
	}
	if p.err != nil {
		*errs = append(*errs, p.err.Error())
	}
}

// failoverProbe kills the gate's leader as the run's nodes start joining, and times the
// other replica's takeover.
type failoverProbe struct {
	mu             sync.Mutex
	killed, leader time.Time
	err            error
}

// killDelay is how long after the first join the leader is killed: before any node can be
// ready to release (their init Pods are ready 2s ± 1s after binding).
const killDelay = 500 * time.Millisecond

func (f *failoverProbe) kill(ctx context.Context, live sim.Live, progress func(string, ...any)) {
	err := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(killDelay):
		}
		old, err := live.Gate().WaitLeaderWithin(ctx, startedTimeout)
		if err != nil {
			return err
		}
		live.Gate().Kill(old)
		f.mu.Lock()
		f.killed = time.Now()
		f.mu.Unlock()
		// On a loaded plane the takeover can take longer than the lease and a retry period.
		next, err := live.Gate().WaitLeaderWithin(ctx, 3*gateundertest.LeaderWait)
		if err != nil {
			return err
		}
		if next == old {
			return errors.New("the killed replica still leads")
		}
		f.mu.Lock()
		f.leader = time.Now()
		f.mu.Unlock()
		return nil
	}()
	if err != nil {
		progress("large: failover: %v", err)
	}
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// result is the failover's figures from the run's releases.
func (f *failoverProbe) result(r *RunResult) *Failover {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &Failover{Run: r.Name, Nodes: r.Nodes, Released: r.Released}
	if f.err != nil {
		out.Error = f.err.Error()
	}
	if f.killed.IsZero() {
		return out
	}
	if !f.leader.IsZero() {
		out.ExitToLeaderS = round2(f.leader.Sub(f.killed).Seconds())
	}
	out.ExitToReleaseS = round2(firstAfter(r.releases, f.killed).Sub(f.killed).Seconds())
	if out.ExitToReleaseS < 0 {
		out.ExitToReleaseS = 0
	}
	for _, t := range r.releases {
		if t.Before(f.killed) {
			out.ReleasedBefore++
		}
	}
	return out
}

// firstAfter is the earliest of ts after t, or t itself when there is none.
func firstAfter(ts []time.Time, t time.Time) time.Time {
	var first time.Time
	for _, x := range ts {
		if x.After(t) && (first.IsZero() || x.Before(first)) {
			first = x
		}
	}
	if first.IsZero() {
		return t
	}
	return first
}

// processStart is when a process started, from /proc (Linux): its start in clock ticks
// since boot (USER_HZ is 100) against the uptime now, both to 10 ms; the boot time in
// /proc/stat is to the second only.
func processStart(pid int) (time.Time, error) {
	now := time.Now()
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	fs := strings.Fields(string(up))
	if len(fs) == 0 {
		return time.Time{}, errors.New("/proc/uptime is empty")
	}
	uptime, err := strconv.ParseFloat(fs[0], 64)
	if err != nil {
		return time.Time{}, err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, err
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(-time.Duration((uptime - float64(ticks)/100) * float64(time.Second))), nil
}

// metricSum sums every series of a counter or gauge whose labels include match.
func metricSum(raw []byte, name string, match map[string]string) (float64, error) {
	fams, err := parseMetrics(raw)
	if err != nil {
		return 0, err
	}
	fam, ok := fams[name]
	if !ok {
		return 0, fmt.Errorf("metric %s not exposed", name)
	}
	sum := 0.0
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m.GetLabel(), match) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, nil
}

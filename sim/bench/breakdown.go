package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/internal/version"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// A release taken apart. Per release, the simulator knows when the write that made the init
// Pod Ready was accepted (the fake kubelet), when its own Pod watch delivered it, and when its
// Node watch delivered the release; the apiserver's audit log knows when the release write
// arrived and when it was stored. Those give exact per-release stages. Inside the gate, its
// own histograms (workqueue wait, decision, rate limiter, write) split the middle part; they
// count every reconcile and request, not only releases, so they are distributions beside the
// per-release ones, not terms of a sum.

// Breakdown is one run's release latency by stage, in the order a release passes them.
type Breakdown struct {
	Run    string  `json:"run"`
	Stages []Stage `json:"stages"`
}

// Stage is one part of a release's latency, in ms.
type Stage struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	// Count is the number of observations; PerRelease says whether they are one per release
	// (exact, from the simulator and the audit log) or the gate's own histogram (every
	// reconcile or request of that kind, interpolated within exponential buckets).
	Count      uint64 `json:"count"`
	PerRelease bool   `json:"per_release"`
}

// sample is one released node's moments in a run.
type sample struct {
	node                      string
	ready, seenReady, release time.Time
}

func samplesOf(res *report.Result) []sample {
	var out []sample
	for i := range res.Records {
		rec := &res.Records[i]
		if rec.Released.IsZero() || rec.InitReady.IsZero() || rec.InitReady.RV > rec.Released.RV {
			continue
		}
		out = append(out, sample{node: rec.Name, ready: rec.ReadyMoment(), seenReady: rec.InitReady.Time, release: rec.Released.Time})
	}
	return out
}

const stageWorkqueue = "workqueue wait (gate)"

// Gate-side stages, from the gate's own metrics.
var gateStageMetrics = []struct {
	name, metric string
	match        map[string]string
}{
	{stageWorkqueue, "workqueue_queue_duration_seconds", map[string]string{"name": "startupgate"}},
	{"decide: reconcile start to write (gate)", "startupgate_release_stage_seconds", map[string]string{"stage": "decide"}},
	{"client rate limiter wait, PATCH (gate)", "rest_client_rate_limiter_duration_seconds", map[string]string{"verb": "PATCH"}},
	{"client rate limiter wait, POST: events (gate)", "rest_client_rate_limiter_duration_seconds", map[string]string{"verb": "POST"}},
	{"Node write round trip (gate)", "startupgate_release_stage_seconds", map[string]string{"stage": "write"}},
}

// gateStages scrapes a gate replica's stage histograms: since its start (a fresh process
// per run), or since the scrape since, if given.
func gateStages(ctx context.Context, r *gateundertest.Replica, since []byte) (map[string]Quantiles, error) {
	raw, err := httpGet(ctx, r.MetricsURL())
	if err != nil {
		return nil, fmt.Errorf("scraping the gate: %w", err)
	}
	out := map[string]Quantiles{}
	for _, m := range gateStageMetrics {
		h, err := deltaOf(since, raw, m.metric, m.match)
		if err != nil {
			return nil, err
		}
		out[m.name] = h.quantiles()
	}
	return out, nil
}

// breakdownOf asks for run's breakdown under label; it is computed once the audit log is read.
func (b *bench) breakdownOf(label, run string) {
	b.rep.BreakdownMS[label] = Breakdown{Run: run}
}

// stagesOf computes a run's breakdown from its samples, the audit log's times of its
// release writes, and (for the gate) its own histograms.
func stagesOf(samples []sample, writes map[string]writeTimes, gate map[string]Quantiles) []Stage {
	var watchIn, toServer, inServer, watchBack, total []time.Duration
	for _, s := range samples {
		watchIn = append(watchIn, s.seenReady.Sub(s.ready))
		total = append(total, s.release.Sub(s.ready))
		w, ok := writes[s.node]
		if !ok {
			continue
		}
		toServer = append(toServer, w.received.Sub(s.ready))
		inServer = append(inServer, w.done.Sub(w.received))
		watchBack = append(watchBack, s.release.Sub(w.done))
	}
	per := func(name string, ds []time.Duration) Stage {
		p50, p99 := quantilesOf(ds)
		return Stage{Name: name, P50: p50, P99: p99, Count: uint64(len(ds)), PerRelease: true}
	}
	out := []Stage{per("watch delivery of the Ready Pod (the recorder's watch, as the gate's informer would see it)", watchIn)}
	for _, m := range gateStageMetrics {
		if q, ok := gate[m.name]; ok {
			out = append(out, Stage{Name: m.name, P50: q.P50, P99: q.P99, Count: q.Count})
		}
	}
	return append(out,
		per("Ready accepted to release write received by the apiserver (all of the above, per release)", toServer),
		per("release write inside the apiserver (audit: received to stored)", inServer),
		per("watch delivery of the release back to the recorder", watchBack),
		per("release latency (total)", total))
}

// quantilesOf gives the p50 and p99 of ds in ms, by nearest rank (0, 0 when empty), as the
// checker's percentiles are.
func quantilesOf(ds []time.Duration) (p50, p99 float64) {
	p := check.PercentilesOf(ds)
	return round2(p.P50), round2(p.P99)
}

// fromAudit reads the audit log once every run is done: each run's Node writes and
// conflicts (gate and floor), the writes per release, and the breakdowns asked for.
func (b *bench) fromAudit() error {
	files, err := auditFiles(b.audit)
	if err != nil {
		return err
	}
	readers := make([]io.Reader, len(files))
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("reading audit log: %w", err)
		}
		defer f.Close()
		readers[i] = f
	}
	a, err := readAudit(io.MultiReader(readers...))
	if err != nil {
		return err
	}
	var gateWrites, gateReleased, floorWrites, floorReleased int
	for i := range b.rep.Runs {
		run := &b.rep.Runs[i]
		c := a.counts[run.Name]
		run.Writes, run.Conflicts = c.ok, c.conflicts
		if !run.from.IsZero() {
			run.Requests = requestsIn(a.requests, run.from, run.to)
		}
		switch run.Mode {
		case benchGate, benchPolicy:
			gateWrites += c.ok
			gateReleased += run.Released
			b.rep.WriteConflicts += c.conflicts
		case benchFloor:
			floorWrites += c.ok
			floorReleased += run.Released
			b.rep.FloorWriteConflicts += c.conflicts
		}
	}
	b.rep.RequestsPerNode = requestsPerNode(b.rep.Runs, b.largest)
	if gateReleased > 0 {
		b.rep.WritesPerRelease = round2(float64(gateWrites) / float64(gateReleased))
	}
	if floorReleased > 0 {
		b.rep.FloorWritesPerRelease = round2(float64(floorWrites) / float64(floorReleased))
	}
	for label, bd := range b.rep.BreakdownMS {
		bd.Stages = stagesOf(b.samples[bd.Run], a.first, b.gateStages[bd.Run])
		b.rep.BreakdownMS[label] = bd
	}
	if bb := b.rep.BindingBurst; bb != nil {
		bb.fromAudit(a, b.burstMeta)
	}
	return nil
}

// auditFiles are the audit log's files, oldest first: those the apiserver rotated out
// (audit-<time>.log, which sort by time), then the log itself.
func auditFiles(path string) ([]string, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	sort.Strings(rotated)
	return append(rotated, path), nil
}

type writeCount struct{ ok, conflicts int }

// writeTimes are when a node's first successful release write reached the apiserver and
// when its response was complete (the object stored).
type writeTimes struct{ received, done time.Time }

type auditTally struct {
	// counts per scenario (the node name up to its last "-n").
	counts map[string]writeCount
	// first successful write per node, by the gate or the floor.
	first map[string]writeTimes
	// requests are every audited request, in log order.
	requests []request
	// gateCalls are the gate's requests, by verb and resource, in log order; bindings,
	// scales and podStatus are the binding-burst runs' pods/binding CREATEs, workload scale
	// PATCHes and the fake kubelet's stored Pod status writes (burst.go), by namespace.
	gateCalls []gateCall
	bindings  []bindingEvent
	scales    []scaleEvent
	podStatus []statusEvent
}

// auditEvent is what readAudit reads of one audit event.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	Received metav1.MicroTime `json:"requestReceivedTimestamp"`
	Stage    metav1.MicroTime `json:"stageTimestamp"`
}

// addBurst keeps what the binding-burst phase reads of an event in a burst's namespace:
// bindings, the workload's scale, and the fake kubelet's stored Pod status writes.
func (out *auditTally) addBurst(ev *auditEvent, comp string) {
	ref := ev.ObjectRef
	switch {
	case ev.Verb == "create" && ref.Resource == "pods" && ref.Subresource == "binding":
		out.bindings = append(out.bindings, bindingEvent{ns: ref.Namespace, pod: ref.Name, code: ev.ResponseStatus.Code,
			message: ev.ResponseStatus.Message, received: ev.Received.Time, done: ev.Stage.Time})
	case ev.Verb == "patch" && ref.Resource == "deployments" && ref.Subresource == "" && comp == compSim:
		out.scales = append(out.scales, scaleEvent{ns: ref.Namespace, workload: ref.Name, at: ev.Received.Time})
	case (ev.Verb == "update" || ev.Verb == "patch") && ref.Resource == "pods" && ref.Subresource == "status" && comp == compKubelet &&
		ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300:
		out.podStatus = append(out.podStatus, statusEvent{ns: ref.Namespace, pod: ref.Name, done: ev.Stage.Time})
	}
}

// readAudit reads an audit log and counts, per scenario, the Node writes whose user agent is
// the gate's or the floor's: successful ones and conflicts; and keeps the times of each
// node's first successful one. Status writes (kubelet) and other controllers' writes are
// not counted there. It also keeps every request's receipt time and sender, for the
// requests per node by component.
func readAudit(r io.Reader) (auditTally, error) {
	out := auditTally{counts: map[string]writeCount{}, first: map[string]writeTimes{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return out, fmt.Errorf("audit log: %w", err)
		}
		comp := componentOf(ev.UserAgent)
		out.requests = append(out.requests, request{at: ev.Received.Time, comp: comp})
		ref := ev.ObjectRef
		if comp == compGate {
			out.gateCalls = append(out.gateCalls, gateCall{at: ev.Received.Time, call: callName(ev.Verb, ref.Resource, ref.Subresource)})
		}
		if strings.HasPrefix(ref.Namespace, burstNamespacePrefix) {
			out.addBurst(&ev, comp)
		}
		if ev.ObjectRef.Resource != "nodes" || ev.ObjectRef.Subresource != "" || ev.Verb == "create" || ev.Verb == "delete" {
			continue
		}
		if !isGateAgent(ev.UserAgent) && !strings.HasPrefix(ev.UserAgent, "startupgate-floor") {
			continue
		}
		stored := ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300
		if _, seen := out.first[ev.ObjectRef.Name]; stored && !seen {
			out.first[ev.ObjectRef.Name] = writeTimes{received: ev.Received.Time, done: ev.Stage.Time}
		}
		// The counts are per scenario, of its nodes named -n<i> (a binding burst's nodes
		// joined during the burst are -x<i>: timed, not counted).
		i := strings.LastIndex(ev.ObjectRef.Name, "-n")
		if i < 0 {
			continue
		}
		scenario := ev.ObjectRef.Name[:i]
		c := out.counts[scenario]
		switch {
		case stored:
			c.ok++
		case ev.ResponseStatus.Code == 409:
			c.conflicts++
		}
		out.counts[scenario] = c
	}
	return out, sc.Err()
}

// nodeEnd is a node as the run left it.
type nodeEnd struct {
	taints []string
	// ready is the node's Ready condition (status and reason) at the end.
	ready string
}

// nodesAtEnd reads the run's nodes while they still exist: their taints, for the report of
// a node never released.
func nodesAtEnd(ctx context.Context, live sim.Live, name string) (map[string]nodeEnd, error) {
	list, err := live.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: scenario.Label + "=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the run's nodes: %w", err)
	}
	out := make(map[string]nodeEnd, len(list.Items))
	for _, n := range list.Items {
		e := nodeEnd{ready: "no Ready condition"}
		for _, t := range n.Spec.Taints {
			e.taints = append(e.taints, taintString(t))
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				e.ready = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason)
			}
		}
		out[n.Name] = e
	}
	return out, nil
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// maxStuck bounds the stuck nodes a run names.
const maxStuck = 100

// stuckNodes names every gated node the run never released (as the checker counts stuck
// nodes), with how far it got — was its init Pod ever bound, was it ready — and the
// taints it carried when the run ended.
func stuckNodes(res *report.Result, ends map[string]nodeEnd) []string {
	var out []string
	for i := range res.Records {
		rec := &res.Records[i]
		if !rec.Gated || !rec.Released.IsZero() || !rec.Deleted.IsZero() || rec.Tainted.IsZero() {
			continue
		}
		if len(out) == maxStuck {
			break
		}
		var bound time.Time
		for _, bd := range rec.Bindings {
			if bd.Init && (bound.IsZero() || bd.Mark.Time.Before(bound)) {
				bound = bd.Mark.Time
			}
		}
		reason := "never released: its init Pod was never bound"
		switch {
		case !bound.IsZero() && rec.InitReady.IsZero():
			reason = fmt.Sprintf("never released: init Pod bound at %.1fs, never ready", bound.Sub(res.Start).Seconds())
		case !bound.IsZero():
			reason = fmt.Sprintf("never released: init Pod bound at %.1fs, ready at %.1fs", bound.Sub(res.Start).Seconds(), rec.InitReady.Time.Sub(res.Start).Seconds())
		}
		taints := "node gone at the end"
		if e, ok := ends[rec.Name]; ok {
			taints = fmt.Sprintf("at the end %s, taints: %s", e.ready, strings.Join(e.taints, ", "))
		}
		out = append(out, fmt.Sprintf("%s: %s; %s", rec.Name, reason, taints))
	}
	return out
}

// processCPU is a process's user and system CPU time so far, from /proc (Linux; USER_HZ is
// 100 there). 0 when there is no such process.
func processCPU(pid int) (float64, error) {
	if pid <= 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces), from the state (field 3) on:
	// utime and stime are fields 14 and 15.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseFloat(fields[11], 64)
	st, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, fields[11], fields[12])
	}
	return (ut + st) / 100, nil
}

// machine describes where the benchmark runs: cores, CPU model, and the commit it runs.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OSArch: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Model: "unknown", Commit: "unknown"}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			m.Commit += "+dirty"
		}
	} else {
		// Not run from the repository: the commit stamped into the binary.
		m.Commit = version.ShortRevision()
	}
	return m
}

package bench

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
)

const testGuard = "pod-guard.startup.k8s.io"

// denied is the message the apiserver gives a binding the guard refused.
func denied(msg string) string {
	return `admission webhook "` + testGuard + `" denied the request: ` + msg
}

// TestRejectionOf: a refused binding is the guard's decision, the guard's own error, or
// neither; an error is told first, as one message can read like both.
func TestRejectionOf(t *testing.T) {
	for _, tc := range []struct {
		name, message, want string
	}{
		{"held node", denied(`node "n1" still holds startup taint startup.k8s.io/initializing=wait:NoSchedule and the pod does not tolerate it; wait for the node to be released`), rejectDecision},
		{"reboot window", denied(`node "n1" rebooted (boot b, released on boot a) and rule default's taint startup.k8s.io/initializing=wait:NoSchedule is coming back; the pod does not tolerate it`), rejectDecision},
		{"continuous window", denied(`node "n1": rule cni's requirements do not hold (cni not ready) and its taint startup.k8s.io/cni-unready:NoSchedule is coming back; the pod does not tolerate it`), rejectDecision},
		{"pod read timed out", denied(`reading pod ns/burst-1 of binding: context deadline exceeded`), rejectError},
		{"rate limiter ran out", denied(`reading pod ns/burst-1 of binding: client rate limiter Wait returned an error: context deadline exceeded`), rejectError},
		{"boot unreadable", denied(`node "n1" may have rebooted, and its boot cannot be read now (context deadline exceeded); the binding is retried`), rejectError},
		{"init pods unreadable, taint coming back unknown", denied(`node "n1" rebooted and its init pods cannot be read now (x), so whether rule default's taint is coming back is unknown; the binding is retried`), rejectError},
		{"guard, neither", denied(`something new`), rejectOther},
		{"conflict", `Operation cannot be fulfilled on pods/binding "burst-1": pod burst-1 is already assigned to node "n1"`, rejectOther},
		{"another webhook's deadline", `admission webhook "other.example.com" denied the request: context deadline exceeded`, rejectOther},
		{"apiserver timeout", `context deadline exceeded`, rejectOther},
	} {
		if got := rejectionOf(testGuard, tc.message); got != tc.want {
			t.Errorf("%s: rejectionOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReadAuditBurst: the audit log's bindings and scales are kept for the binding-burst
// runs' namespaces only, with their answers; the gate's requests are kept by verb and
// resource, whatever its binary is named.
func TestReadAuditBurst(t *testing.T) {
	ns := burstNamespacePrefix + "guard-off-r1-42"
	log := strings.Join([]string{
		`{"verb":"patch","userAgent":"startupgate-sim","objectRef":{"resource":"deployments","namespace":"` + ns + `","name":"burst"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z"}`,
		`{"verb":"create","userAgent":"kube-scheduler/v1.36.3","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"burst-a","subresource":"binding"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T00:00:01.500000Z","stageTimestamp":"2026-01-01T00:00:01.510000Z"}`,
		`{"verb":"create","userAgent":"kube-scheduler/v1.36.3","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"burst-b","subresource":"binding"},"responseStatus":{"code":400,"message":"` + strings.ReplaceAll(denied("reading pod x: context deadline exceeded"), `"`, `\"`) + `"},"requestReceivedTimestamp":"2026-01-01T00:00:01.600000Z","stageTimestamp":"2026-01-01T00:00:03.100000Z"}`,
		// another run's namespace, and a patch of the workload by someone else: not kept
		`{"verb":"create","userAgent":"kube-scheduler/v1.36.3","objectRef":{"resource":"pods","namespace":"sim-bench-gate-10-1","name":"batch-a","subresource":"binding"},"responseStatus":{"code":201}}`,
		`{"verb":"patch","userAgent":"kube-controller-manager/v1.36.3","objectRef":{"resource":"deployments","namespace":"` + ns + `","name":"burst"},"responseStatus":{"code":200}}`,
		// the fake kubelet's status writes: a stored one kept, a conflict not
		`{"verb":"update","userAgent":"startupgate-sim-kubelet","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"init-x","subresource":"status"},"responseStatus":{"code":200},"stageTimestamp":"2026-01-01T00:00:00.900000Z"}`,
		`{"verb":"update","userAgent":"startupgate-sim-kubelet","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"init-x","subresource":"status"},"responseStatus":{"code":409},"stageTimestamp":"2026-01-01T00:00:00.950000Z"}`,
		// the gate's requests, the before binary's among them
		`{"verb":"get","userAgent":"gate/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"burst-a"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.505000Z"}`,
		`{"verb":"list","userAgent":"before-gate/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"pods","namespace":"` + ns + `"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.506000Z"}`,
		// its release of a node joined during the burst, which is timed though not named -n<i>
		`{"verb":"patch","userAgent":"before-gate/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"nodes","name":"bench-bind-guard-off-r1-x0"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.700000Z"}`,
	}, "\n")
	a, err := readAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.scales) != 1 || a.scales[0].workload != burstWorkload || a.scales[0].ns != ns {
		t.Errorf("scales = %+v, want the simulator's one", a.scales)
	}
	if len(a.bindings) != 2 {
		t.Fatalf("bindings = %+v, want the run's two", a.bindings)
	}
	if b := a.bindings[1]; b.code != 400 || rejectionOf(testGuard, b.message) != rejectError || b.done.Sub(b.received) != 1500*time.Millisecond {
		t.Errorf("refused binding = %+v", b)
	}
	if len(a.podStatus) != 1 || a.podStatus[0].pod != "init-x" {
		t.Errorf("pod status writes = %+v, want the stored one", a.podStatus)
	}
	var calls []string
	for _, c := range a.gateCalls {
		calls = append(calls, c.call)
	}
	if w, ok := a.first["bench-bind-guard-off-r1-x0"]; !ok || w.received.Nanosecond() != 700000000 {
		t.Errorf("release of the burst's extra node: %+v, %v", w, ok)
	}
	if want := []string{"get pods", "list pods", "patch nodes"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("gate calls = %v, want %v", calls, want)
	}
}

// TestBurstFromEvents: a run's rates, window, calls per binding and rejections, from its
// bindings (the init Pods' left out) and the gate's calls (those outside the burst's window
// left out).
func TestBurstFromEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := func(pod string, ms int) bindingEvent {
		return bindingEvent{pod: pod, code: 201, received: at(ms - 5), done: at(ms)}
	}
	bindings := []bindingEvent{
		ok("init-x1", 100), // an init Pod's, before the burst
		ok("burst-a", 1000),
		{pod: "burst-b", code: 403, message: denied(`node "n1" still holds startup taint t and the pod does not tolerate it`), received: at(1100), done: at(1101)},
		{pod: "burst-b", code: 400, message: denied("reading pod ns/burst-b of binding: context deadline exceeded"), received: at(1200), done: at(2700)},
		{pod: "burst-b", code: 409, message: "pod burst-b is already assigned", received: at(1300), done: at(1301)},
		ok("burst-b", 3000),
		ok("burst-c", 2000),
		ok("burst-a", 3500), // a second success for the same Pod does not move its binding
	}
	calls := []gateCall{
		{at(400), "get pods"}, // before the scale
		{at(600), "get pods"}, {at(1000), "get pods"}, {at(2000), "get pods"}, {at(2000), "get nodes"}, {at(3000), "list pods"},
		{at(3001), "get pods"}, // after the last binding
	}
	r := BurstRun{Pods: 3}
	r.fromEvents(bindings, at(500), calls, testGuard)
	if r.BindMS.P50 != 5 || r.BindMS.Max != 1500 {
		t.Errorf("binding in the apiserver %+v, want p50 5 ms (received 5 ms before done), max 1500 ms", r.BindMS)
	}
	if r.Bound != 3 || r.BindAttempts != 7 {
		t.Errorf("bound %d, attempts %d; want 3 and 7", r.Bound, r.BindAttempts)
	}
	if r.BoundPerS != 1.5 || r.BoundPerSFromScale != 1.2 || r.ScaleToFirstBindS != 0.5 || r.ScaleToLastBindS != 2.5 {
		t.Errorf("bound/s %v, from the scale %v, scale to first %v s, to last %v s; want 1.5, 1.2, 0.5, 2.5",
			r.BoundPerS, r.BoundPerSFromScale, r.ScaleToFirstBindS, r.ScaleToLastBindS)
	}
	if want := map[string]float64{"get pods": 1, "get nodes": 0.33, "list pods": 0.33}; !reflect.DeepEqual(r.GateCallsPerBinding, want) {
		t.Errorf("calls per binding = %v, want %v", r.GateCallsPerBinding, want)
	}
	rj := r.Rejected
	if rj.Decision != 1 || rj.GuardError != 1 || rj.Other != 1 {
		t.Errorf("rejected %s, want 1 / 1 / 1", rj)
	}
	if s := rj.Samples[rejectError]; !strings.HasPrefix(s, "400: ") || !strings.Contains(s, "reading pod") {
		t.Errorf("guard error sample %q", s)
	}

	// No scale seen: the window opens at the first binding's arrival, and no rate from the scale.
	var n BurstRun
	n.fromEvents(bindings, time.Time{}, calls, testGuard)
	if n.BoundPerSFromScale != 0 || n.ScaleToLastBindS != 0 || n.GateCalls["get pods"] != 2 {
		t.Errorf("without the scale: from scale %v, to last %v, calls %v; want 0, 0 and the two get pods from the first binding on", n.BoundPerSFromScale, n.ScaleToLastBindS, n.GateCalls)
	}
	var none BurstRun
	none.fromEvents(nil, at(500), calls, testGuard)
	if none.Bound != 0 || none.GateCallsPerBinding != nil {
		t.Errorf("no binding: %+v, want nothing measured", none)
	}
}

// burstRun is a complete run of mode in round r with the given figures.
func burstRun(mode string, r int, boundPerS, c99, adm99 float64) BurstRun {
	adm := Quantiles{}
	if adm99 > 0 { // the guard answered
		adm = Quantiles{P50: adm99 / 10, P99: adm99, Count: 200, BucketMS: 5}
	}
	return BurstRun{Run: burstName(mode, r), Mode: mode, Round: r, Pods: 100, Bound: 100, Nodes: 12, Released: 12, Extra: 2, ExtraReleased: 2, ExtraTimed: 2,
		BoundPerS: boundPerS, BoundPerSFromScale: boundPerS / 2, CreateToBoundMS: check.Percentiles{P50: c99 / 4, P99: c99}, CreateToBoundN: 100,
		AdmissionMS: adm, ExtraReleaseMS: check.Percentiles{P99: 30},
		GateCallsPerBinding: map[string]float64{"get pods": 1}}
}

// TestBurstSummarize: per mode, the medians of the complete rounds, the rejections summed
// over every round, and the per-round ratios to guard-off.
func TestBurstSummarize(t *testing.T) {
	incomplete := burstRun(burstGuardStartup, 3, 1, 99999, 999)
	incomplete.Bound, incomplete.CreateToBoundN = 60, 60
	answered504 := burstRun(burstGuardOff, 4, 1000, 1, 0) // a binding stored, though answered 504: complete
	answered504.Bound = 99
	incomplete.Rejected = Rejections{GuardError: 5, Samples: map[string]string{rejectError: "400: late"}}
	withDecision := burstRun(burstGuardStartup, 2, 80, 2000, 4)
	withDecision.Rejected = Rejections{Decision: 2, Samples: map[string]string{rejectDecision: "403: held"}}
	withDecision.GateRestarts = 1
	bb := &BindingBurst{Runs: []BurstRun{
		burstRun(burstGuardOff, 1, 200, 1000, 0), burstRun(burstGuardStartup, 1, 100, 3000, 2),
		burstRun(burstGuardOff, 2, 100, 1000, 0), withDecision,
		burstRun(burstGuardOff, 3, 150, 800, 0), incomplete, answered504,
	}}
	bb.summarize()
	if len(bb.Modes) != 2 {
		t.Fatalf("modes %+v, want guard-off and guard-startup (the modes that ran)", bb.Modes)
	}
	off, st := bb.Modes[0], bb.Modes[1]
	if off.Mode != burstGuardOff || off.Complete != 4 || off.BoundPerS != 175 || off.CreateToBoundP99MS != 900 || off.BoundPerSRatio.N != 0 {
		t.Errorf("guard-off = %+v", off)
	}
	if st.Runs != 3 || st.Complete != 2 || st.BoundPerS != 90 || st.BoundPerSFromScale != 45 || st.CreateToBoundP99MS != 2500 || st.AdmissionP99MS != 3 {
		t.Errorf("guard-startup = %+v; want the medians of its two complete rounds", st)
	}
	if st.BoundPerSRatio != (RatioSummary{Median: 0.65, Min: 0.5, Max: 0.8, N: 2}) {
		t.Errorf("bound/s ratio %+v, want rounds 1 and 2: 0.5 and 0.8", st.BoundPerSRatio)
	}
	if st.CreateToBoundP99Ratio != (RatioSummary{Median: 2.5, Min: 2, Max: 3, N: 2}) {
		t.Errorf("create to bound p99 ratio %+v, want 3 and 2", st.CreateToBoundP99Ratio)
	}
	if st.Rejected.Decision != 2 || st.Rejected.GuardError != 5 || len(st.Rejected.Samples) != 2 || st.GateRestarts != 1 {
		t.Errorf("rejections %+v, want every round's, the incomplete one's too", st.Rejected)
	}
	if st.AdmissionBucketMS != 5 || off.AdmissionBucketMS != 0 {
		t.Errorf("admission p99 bucket: guard-startup %v, guard-off %v; want 5 ms and none", st.AdmissionBucketMS, off.AdmissionBucketMS)
	}
	if st.ExtraReleaseP99MS != 30 || st.GateCallsPerBinding["get pods"] != 1 {
		t.Errorf("extra release p99 %v, calls %v", st.ExtraReleaseP99MS, st.GateCallsPerBinding)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 2, 3}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestBurstOrder: each round runs every mode once, and each mode comes first once in as
// many rounds as there are modes.
func TestBurstOrder(t *testing.T) {
	firsts := map[string]bool{}
	for r := 1; r <= len(burstModes); r++ {
		order := burstOrder(r)
		seen := map[string]bool{}
		for _, m := range order {
			seen[m] = true
		}
		if len(seen) != len(burstModes) {
			t.Errorf("round %d runs %v", r, order)
		}
		firsts[order[0]] = true
	}
	if len(firsts) != len(burstModes) || burstOrder(1)[0] != burstGuardOff {
		t.Errorf("first modes %v; want each once, guard-off in round 1", firsts)
	}
}

// TestBurstScenario: each mode's scenario names its run, joins the nodes, then scales the
// workload and joins the extra nodes once every node is released, with the config the mode
// names; only config fields the before gate knows are used.
func TestBurstScenario(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		guard    bool
		rules    int
		reboot   bool
		cont     bool
		initDSes int
	}{
		{burstGuardOff, false, 0, false, false, 1},
		{burstGuardStartup, true, 0, false, false, 1},
		{burstGuardReboot, true, 1, true, false, 1},
		{burstGuardContinuous, true, 2, false, true, 2},
	} {
		l := &burstLoad{mode: tc.mode, round: 2, nodes: 100, pods: 3000, extra: 10}
		sc, err := benchScenario(load{mode: tc.mode, burst: l})
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if sc.Name != burstName(tc.mode, 2) || sc.Name != (load{burst: l}).name() || len(sc.Name) > 40 {
			t.Errorf("%s: scenario named %q", tc.mode, sc.Name)
		}
		cfg := sc.GateConfig
		if cfg.PodGuard != tc.guard || len(cfg.Rules) != tc.rules || sc.Admission != "policy" || len(sc.Init) != tc.initDSes {
			t.Errorf("%s: podGuard %v, %d rules, admission %q, %d init DaemonSets", tc.mode, cfg.PodGuard, len(cfg.Rules), sc.Admission, len(sc.Init))
		}
		reboot, cont := false, false
		for _, r := range cfg.Rules {
			reboot = reboot || r.OnReboot == rule.RebootGate
			cont = cont || r.Mode == rule.Continuous
		}
		if reboot != tc.reboot || cont != tc.cont {
			t.Errorf("%s: onReboot gate %v, continuous %v", tc.mode, reboot, cont)
		}
		tl := sc.Timeline
		if len(tl) != 3 || tl[0].Join == nil || tl[0].Join.Count != 100 || tl[1].Scale == nil || tl[1].Scale.Replicas != 3000 ||
			!tl[1].AfterReleased || tl[2].Join == nil || tl[2].Join.Count != 10 || !tl[2].AfterReleased {
			t.Errorf("%s: timeline %+v", tc.mode, tl)
		}
		if len(sc.Workloads) != 1 || sc.Workloads[0].Name != burstWorkload || sc.Workloads[0].Replicas != 0 {
			t.Errorf("%s: workloads %+v", tc.mode, sc.Workloads)
		}
	}
	sc, err := burstScenario(&burstLoad{mode: burstGuardOff, round: 1, nodes: 5, pods: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Timeline) != 2 {
		t.Errorf("no extra nodes: timeline %+v, want the join and the scale", sc.Timeline)
	}
	if _, err := burstScenario(&burstLoad{mode: "nope", round: 1, nodes: 1, pods: 1}); err == nil {
		t.Error("an unknown mode must be an error")
	}
}

// TestBurstMarkdown: bench.md's binding-burst section has a row per mode, and a run of
// that phase alone shows no targets it did not measure.
func TestBurstMarkdown(t *testing.T) {
	r := &Report{Only: PhaseBindingBurst, BindingBurst: &BindingBurst{Nodes: 100, Pods: 3000, Extra: 10, Rounds: 1, GuardWebhook: testGuard, Runs: []BurstRun{
		burstRun(burstGuardOff, 1, 200, 1000, 0), burstRun(burstGuardStartup, 1, 100, 3000, 2),
	}}}
	r.BindingBurst.Runs[1].Rejected = Rejections{GuardError: 1, Samples: map[string]string{rejectError: "400: reading pod"}}
	r.BindingBurst.summarize()
	md := r.String()
	for _, want := range []string{
		"| guard-off | 1 of 1 | 200 | 100 | 250 / 1000 | not measured | no guard | 1.00 (get pods 1.00) | 0 / 0 / 0 | 0 | 0 | 30 | 1 (reference) | 1 (reference) |",
		"| guard-startup | 1 of 1 | 100 | 50 | 750 / 3000 | not measured | 0 / 2 (≤ 5 ms bucket) | 1.00 (get pods 1.00) | 0 / 1 / 0 | 0 | 0 | 30 | 0.50 (0.50–0.50, 1) | 3.00 (3.00–3.00, 1) |",
		"guard-startup, a binding rejected (guard error): `400: reading pod`",
		"Only the binding-burst phase ran.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bench.md has no %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| target |") {
		t.Errorf("a binding-burst run alone shows the targets:\n%s", md)
	}
	var page bytes.Buffer
	if err := r.renderHTML(&page); err != nil {
		t.Fatal(err)
	}
	if p := page.String(); !strings.Contains(p, "<h2>binding burst</h2>") || !strings.Contains(p, "<td>guard-startup</td>") || strings.Contains(p, "<h2>targets</h2>") {
		t.Errorf("bench.html of a binding-burst run alone: want its table and no targets:\n%s", p)
	}
	if md := synthetic().String(); !strings.Contains(md, "Binding burst: not measured.") {
		t.Errorf("a report without the phase must say so:\n%s", md)
	}
}

// TestReleaseLatencies: a node's release is timed from the last stored status write of its
// init Pods before the release write, by the audit log; a node without a release write, or
// with an init Pod never written before it, is not timed.
func TestReleaseLatencies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	statuses := map[string][]time.Time{
		"ns/init-a": {at(100), at(2100)},           // Running, then Ready
		"ns/init-b": {at(120), at(2050), at(5000)}, // a write after the release does not count
		"ns/cni-b":  {at(130), at(2300)},
		"ns/init-c": {at(3000)}, // only after its node's release
		"ns/init-e": {at(100), at(2200)},
		"ns/cni-e":  {at(2600)}, // the other rule's component, not started by the first release
		"ns/init-d": {at(2000)}, // its node never released
	}
	first := map[string]writeTimes{
		"x0": {received: at(2150)}, "x1": {received: at(2400)}, "x2": {received: at(2500)}, "x5": {received: at(2275)},
	}
	p, timed := releaseLatencies("ns", map[string][]string{
		"x0": {"init-a"}, "x1": {"init-b", "cni-b"}, "x2": {"init-c"}, "x3": {"init-d"}, "x4": nil, "x5": {"init-e", "cni-e"},
	}, statuses, first)
	if timed != 3 || p.P50 != 75 || p.Max != 100 {
		t.Errorf("timed %d, %+v; want x0 in 50 ms, x1 in 100 ms (after its later component), x5 in 75 ms (its first component's)", timed, p)
	}
}

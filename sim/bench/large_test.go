package bench

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/scenario"
)

func largeSynthetic() *LargeReport {
	return &LargeReport{Machine: Machine{CPUs: 2, Model: "AMD EPYC", Commit: "abc1234"}, Burst: 1000, Workloads: 100,
		FailoverNodes: 200, IdleS: 60, Profile: kubelet.DefaultProfile(),
		Sizes: []LargeSize{
			{Nodes: 0, GateFigures: GateFigures{SyncS: 1.2, HeapBytes: 20 << 20, HeapLiveBytes: 10 << 20, RSSBytes: 60 << 20, IdleCPUPct: 0.1},
				Warmup:   &Burst{Nodes: 1000, Released: 1000, P50: 2000, P99: 9000},
				Gate:     &Burst{Nodes: 1000, Released: 1000, P50: 400, P99: 1000},
				Floor:    &Burst{Nodes: 1000, Released: 1000, P50: 300, P99: 800},
				Failover: &Failover{Nodes: 200, Released: 200, ExitToLeaderS: 15.2, ExitToReleaseS: 15.6}},
			// The gate's burst did not release every node; the floor and the probe failed.
			{Nodes: 10000, FillS: 120, NodeProtobufBytes: 11000, NodeJSONBytes: 16000, EtcdBytes: 400 << 20,
				GateFigures: GateFigures{SetupSettleS: 20, SyncS: 4, SyncCPUS: 3.5, SyncPlaneCPUS: map[string]float64{"kube-apiserver": 2.5, "etcd": 0.25, simulatorProcess: 0.5},
					HeapBytes: 80 << 20, HeapLiveBytes: 45 << 20, RSSBytes: 150 << 20, IdleCPUPct: 0.4, Updates: 5000, UpdateCPUMSPer1000: 300},
				Gate:   &Burst{Nodes: 1000, Released: 990, P50: 500, P99: 1300},
				Errors: []string{"gate probe: boom"}},
		}}
}

// TestLargeMarkdownNotMeasured: a figure the run did not measure (a burst that did not
// release every node, a floor never run) reads "not measured" and meets no target.
func TestLargeMarkdownNotMeasured(t *testing.T) {
	md := largeSynthetic().String()
	for _, want := range []string{
		"| static nodes | 0 | 10000 |",
		"| burst: the empty plane's warm-up (floor, not in the ratios) p50 / p99 (ms) | 2000 / 9000 | – |",
		"| burst: gate p50 / p99 (ms) | 400 / 1000 | not measured (990 of 1000 released) |",
		"| burst: gate p99, populated / empty | – | not measured |",
		"| burst: floor p50 / p99 (ms) | 300 / 800 | not measured |",
		"| failover: leader exit to first release by the new one (s) | 15.6 | not measured |",
		"| gate heap per static node, over the empty plane's (bytes) | – | 6291 |",
		"| gate live heap after sync: MiB, and bytes per static node over the empty plane's | 10 | 45 (3670) |",
		"| gate CPU at one status report per node per 5 min (% of one core) | – | 1.00 |",
		"| after the gate run's setup, until the plane was quiet, before the gate started (s) | 0 | 20 |",
		"| CPU in that start (s): gate / kube-apiserver / etcd / kube-controller-manager / kube-scheduler / simulator | not measured | 3.5 / 2.5 / 0.2 / 0.0 / 0.0 / 0.5 |",
		"| gate release p99, populated / empty ≤ 1.2 (10000 static nodes) | not measured | **no** |",
		"| gate heap ≤ 300 MiB (10000 static nodes) | 80 MiB | yes |",
		"| gate idle CPU ≤ 1 % of one core (10000 static nodes) | 0.40 % | yes |",
		"- 10000 static nodes: gate probe: boom",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bench-large.md has no %q:\n%s", want, md)
		}
	}
}

func TestLargeTargetRatio(t *testing.T) {
	r := largeSynthetic()
	r.Sizes[1].Gate.Released = 1000
	md := r.String()
	if want := "| gate release p99, populated / empty ≤ 1.2 (10000 static nodes) | 1.30 | **no** |"; !strings.Contains(md, want) {
		t.Errorf("bench-large.md has no %q:\n%s", want, md)
	}
	r.Sizes[1].Gate.P99 = 1100
	if want := "| 1.10 | yes |"; !strings.Contains(r.String(), want) {
		t.Errorf("bench-large.md has no %q:\n%s", want, r.String())
	}
}

func TestLargeMarkdownEmpty(t *testing.T) {
	if md := (&LargeReport{}).String(); !strings.Contains(md, "Every figure: not measured.") {
		t.Errorf("an empty report reads:\n%s", md)
	}
}

func TestPerNodeBytes(t *testing.T) {
	for _, tc := range []struct {
		heap, empty uint64
		nodes       int
		want        int64
	}{
		{heap: 120 << 20, empty: 20 << 20, nodes: 10000, want: 10485},
		{heap: 20 << 20, empty: 20 << 20, nodes: 10000, want: 0},
		{heap: 19 << 20, empty: 20 << 20, nodes: 1 << 20, want: -1},
		{heap: 1, empty: 0, nodes: 0, want: 0},
	} {
		if got := perNodeBytes(tc.heap, tc.empty, tc.nodes); got != tc.want {
			t.Errorf("perNodeBytes(%d, %d, %d) = %d, want %d", tc.heap, tc.empty, tc.nodes, got, tc.want)
		}
	}
}

func TestReportsCPUPct(t *testing.T) {
	for _, tc := range []struct {
		ms    float64
		nodes int
		want  float64
	}{
		{ms: 300, nodes: 10000, want: 1},         // 33.3 reports/s × 0.3 ms
		{ms: 300, nodes: 50000, want: 5},         // five times the nodes, five times the CPU
		{ms: 60, nodes: 50000, want: 1},          // a fifth of the cost per report
		{ms: 0, nodes: 50000, want: 0},           // free
		{ms: 1000, nodes: 300, want: 0.1},        // one report a second at 1 ms
		{ms: 1000, nodes: 0, want: 0},            // no nodes, no reports
		{ms: 123.4, nodes: 100000, want: 4.11},   // rounded to two places
		{ms: 10000, nodes: 100000, want: 333.33}, // more than a core: said as it is
	} {
		if got := reportsCPUPct(tc.ms, tc.nodes); got != tc.want {
			t.Errorf("reportsCPUPct(%v, %d) = %v, want %v", tc.ms, tc.nodes, got, tc.want)
		}
	}
}

func TestFirstAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name string
		ts   []time.Time
		want time.Time
	}{
		{"the earliest after", []time.Time{at(9), at(-1), at(4), at(7)}, at(4)},
		{"none after: the moment itself", []time.Time{at(-3), at(0)}, at(0)},
		{"none at all", nil, at(0)},
	} {
		if got := firstAfter(tc.ts, t0); !got.Equal(tc.want) {
			t.Errorf("%s: firstAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLargeLoadNames: every run of the large phase has a name of its own (node names and
// the audit log's counts derive from it), whatever the size, the mode, the warm-up or the
// failover.
func TestLargeLoadNames(t *testing.T) {
	seen := map[string]bool{}
	for _, static := range []int{0, 10000, 50000} {
		for _, l := range []load{
			{large: true, mode: benchPolicy, nodes: 1000, static: static},
			{large: true, mode: benchFloor, nodes: 1000, static: static},
			{large: true, warmup: true, mode: benchFloor, nodes: 1000, static: static},
			{large: true, mode: benchPolicy, nodes: 200, static: static, replicas: 2, failover: &failoverProbe{}},
		} {
			name := l.name()
			if seen[name] {
				t.Errorf("two runs are named %s", name)
			}
			seen[name] = true
			sc, err := benchScenario(l)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if sc.Name != name {
				t.Errorf("scenario of %s is named %s", name, sc.Name)
			}
		}
	}
}

// TestLargeScenario: the large phase's loads set their workload count and gate replicas,
// and their bound grows with the static nodes.
func TestLargeScenario(t *testing.T) {
	sc, err := benchScenario(load{large: true, mode: benchPolicy, nodes: 200, static: 10, workloads: 20, replicas: 2, failover: &failoverProbe{}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.GateProcess == nil || sc.GateProcess.Replicas != 2 {
		t.Errorf("gateProcess = %+v, want 2 replicas", sc.GateProcess)
	}
	if len(sc.Workloads) != 1 || sc.Workloads[0].Replicas != 20 {
		t.Errorf("workloads = %+v, want 20 replicas", sc.Workloads)
	}
	empty, err := benchScenario(load{large: true, mode: benchFloor, nodes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	full, err := benchScenario(load{large: true, mode: benchFloor, nodes: 1000, static: 50000})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Timeout != 4*time.Minute || full.Timeout != 9*time.Minute {
		t.Errorf("a 1000-node burst's bound is %v on the empty plane and %v on 50,000 static nodes, want 4m and 9m", empty.Timeout, full.Timeout)
	}
	plain, err := benchScenario(load{mode: benchPolicy, nodes: 300})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Workloads[0].Replicas != 300 || plain.GateProcess.Replicas != 1 {
		t.Errorf("the benchmark's own load changed: %d workload Pods, %d replicas", plain.Workloads[0].Replicas, plain.GateProcess.Replicas)
	}
}

// TestLeftovers: the clean-up between runs deletes a run's nodes but never a static node.
func TestLeftovers(t *testing.T) {
	sel, err := labels.Parse(leftovers)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lbls labels.Set
		want bool
	}{
		{labels.Set{scenario.Label: "lg0-gate-policy-1000"}, true},
		{labels.Set{scenario.Label: staticScenario}, false},
		{labels.Set{"kubernetes.io/hostname": "x"}, false},
	} {
		if got := sel.Matches(tc.lbls); got != tc.want {
			t.Errorf("%q matches %v: %v, want %v", leftovers, tc.lbls, got, tc.want)
		}
	}
}

// TestStaticInitPodCached: a static node's init Pod is one the gate caches (its default
// component selector), as every init Pod of a cluster running the gate is.
func TestStaticInitPodCached(t *testing.T) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := staticInitPod("static-000001")
	sc := cfg.PodScopes()[0]
	if !sc.Selector.Matches(labels.Set(p.Labels)) {
		t.Errorf("the gate's cache selector %s does not select %v", sc.Selector, p.Labels)
	}
	if sc.Namespace != "" && sc.Namespace != p.Namespace {
		t.Errorf("the gate caches namespace %s only, the init Pod is in %s", sc.Namespace, p.Namespace)
	}
	if p.Spec.NodeName != "static-000001" {
		t.Errorf("init Pod bound to %q", p.Spec.NodeName)
	}
}

// TestLargeMarkdownBefore: a before gate's figures sit beside the gate under test's, and
// a size without them reads "not measured".
func TestLargeMarkdownBefore(t *testing.T) {
	r := largeSynthetic()
	if strings.Contains(r.String(), "before gate") {
		t.Errorf("bench-large.md has before rows without a before gate:\n%s", r.String())
	}
	r.Sizes[1].Before = &GateFigures{SyncS: 5, SyncCPUS: 3.5, HeapBytes: 160 << 20, HeapLiveBytes: 90 << 20, RSSBytes: 220 << 20, IdleCPUPct: 0.5,
		Updates: 5000, UpdateCPUMSPer1000: 450}
	r.Sizes[1].BeforeFailover = &Failover{Nodes: 200, Released: 200, ExitToLeaderS: 15.5, ExitToReleaseS: 46.4}
	md := r.String()
	for _, want := range []string{
		"| gate heap, under test / before | not measured | 0.50 |",
		"| before gate: heap / RSS after sync (MiB) | not measured | 160 / 220 |",
		"| before gate: live heap after sync (MiB) | not measured | 90 |",
		"| gate live heap, under test / before | not measured | 0.50 |",
		"| before gate: its CPU in that start (s) | not measured | 3.5 |",
		"| before gate: CPU per 1000 Node status reports (ms) | – | 450 (5000 reports) |",
		"| failover: leader exit to first release by the new one (s) | 15.6 | not measured |",
		"| before gate: failover, leader exit to new leader (s) | not measured | 15.5 |",
		"| before gate: failover, leader exit to first release (s) | not measured | 46.4 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bench-large.md has no %q:\n%s", want, md)
		}
	}
}

// TestOwnLabelsScenario: with own labels, the gate's config caches three Pod scopes, one per
// component and none by a key the filler Pods carry; every mode has the three DaemonSets
// beside the default one, and the floor and the reactive peer keep what they had.
func TestOwnLabelsScenario(t *testing.T) {
	filler := labels.Set{"sim.startupgate.io/filler": "true", "app": "bench-filler"}
	for _, mode := range []string{benchGate, benchPolicy, benchFloor, benchReactive} {
		sc, err := benchScenario(load{mode: mode, nodes: 100, jitter: time.Second, ownLabels: true})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(sc.Init) != 1+len(ownComponents) {
			t.Errorf("%s: %d init DaemonSets, want %d", mode, len(sc.Init), 1+len(ownComponents))
		}
		scopes := sc.GateConfig.PodScopes()
		want := len(ownComponents)
		if mode == benchFloor {
			want = 1 // the default config's one scope
		}
		if len(scopes) != want {
			t.Errorf("%s: %d Pod scopes %v, want %d", mode, len(scopes), scopes, want)
		}
		for _, s := range scopes {
			if s.Selector.Matches(filler) {
				t.Errorf("%s: scope %s caches the filler Pods", mode, s.Selector)
			}
		}
		if got := sc.GateConfig.Backfill; got != (mode == benchReactive) {
			t.Errorf("%s: backfill %v", mode, got)
		}
	}
}

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/report"
)

// LargeReport is out/bench-large.json. A figure that was not measured is zero or absent
// and reads "not measured" in bench-large.md.
type LargeReport struct {
	Machine Machine `json:"machine"`
	// Burst and Workloads are the nodes and workload Pods of each size's burst;
	// FailoverNodes joins in the failover run; IdleS is the idle window.
	Burst         int     `json:"burst_nodes"`
	Workloads     int     `json:"burst_workload_pods"`
	FailoverNodes int     `json:"failover_nodes"`
	IdleS         float64 `json:"idle_s"`
	// Profile is the static nodes' shape.
	Profile kubelet.NodeProfile `json:"profile"`
	// Plane lists every setting the phase gave the plane.
	Plane []string `json:"plane_settings"`
	// Sizes are the static node counts in the order they ran, the empty plane first.
	Sizes      []LargeSize          `json:"sizes"`
	Breakdowns map[string]Breakdown `json:"breakdown_ms"`
	Runs       []RunResult          `json:"runs"`
}

// LargeSize is every figure at one number of static nodes.
type LargeSize struct {
	Nodes int `json:"static_nodes"`
	// FillS is how long registering the static nodes added since the last size took;
	// SettleS how long the plane then took to go quiet, before the gate was probed
	// (large_settle.go).
	FillS   float64 `json:"fill_s"`
	SettleS float64 `json:"settle_s"`
	// NodeProtobufBytes and NodeJSONBytes are one static node as the apiserver serves it:
	// protobuf is how it is stored in etcd.
	NodeProtobufBytes int    `json:"node_protobuf_bytes"`
	NodeJSONBytes     int    `json:"node_json_bytes"`
	EtcdBytes         uint64 `json:"etcd_db_bytes"`
	// RSS is each process's resident memory after the fill, by name: the plane's and the
	// simulator's, which holds the static nodes' kubelet.
	RSS map[string]uint64 `json:"rss_bytes,omitempty"`
	// Reached is how many static nodes the fill registered when it stopped short of
	// Nodes (zero: it did not): the machine's memory ran low first, and Errors says how
	// low. Nothing is measured at such a size, and no larger size runs.
	Reached int `json:"reached_nodes,omitempty"`
	// GateFigures are the gate under test's, read before the burst.
	GateFigures
	// Before are the same figures of the --large-before-gate binary, when one was given:
	// the change under test, before and after, in one run.
	Before *GateFigures `json:"before,omitempty"`
	// Warmup is the empty plane's unmeasured first burst (large.go's warmup); Gate and
	// Floor are the size's bursts.
	Warmup   *Burst    `json:"warmup,omitempty"`
	Gate     *Burst    `json:"gate,omitempty"`
	Floor    *Burst    `json:"floor,omitempty"`
	Failover *Failover `json:"failover,omitempty"`
	// BeforeFailover is the before gate's failover, when one was given.
	BeforeFailover *Failover `json:"before_failover,omitempty"`
	Errors         []string  `json:"errors,omitempty"`
}

// GateFigures are a fresh gate's, on the plane at one size, before anything joins.
type GateFigures struct {
	// SetupSettleS is how long the plane took to go quiet after the run's setup, before
	// the gate started (large_probe.go's beforeGate).
	SetupSettleS float64 `json:"setup_settle_s"`
	// SyncS is the gate process's start to its initial list reconciled (every static
	// node, an empty queue); SyncCPUS the gate's CPU until then, and SyncPlaneCPUS each
	// plane process's and the simulator's over the same time.
	SyncS         float64            `json:"sync_s"`
	SyncCPUS      float64            `json:"sync_cpu_s"`
	SyncPlaneCPUS map[string]float64 `json:"sync_plane_cpu_s,omitempty"`
	// HeapBytes (heap in use), HeapLiveBytes (the live objects in it) and RSSBytes are the
	// synced gate's, after a forced GC (probes.go's gateMem).
	HeapBytes     uint64 `json:"heap_bytes"`
	HeapLiveBytes uint64 `json:"heap_live_bytes,omitempty"`
	RSSBytes      uint64 `json:"rss_bytes"`
	// IdleCPUPct is the synced gate's CPU while nothing joins nor changes, in percent of
	// one core; IdlePlaneCPUPct the plane's processes' over the same window.
	IdleCPUPct      float64            `json:"idle_cpu_pct"`
	IdlePlaneCPUPct map[string]float64 `json:"idle_plane_cpu_pct,omitempty"`
	// UpdateCPUMSPer1000 is the gate's CPU per 1000 Node status reports (Updates of them).
	Updates            int     `json:"updates"`
	UpdateCPUMSPer1000 float64 `json:"update_cpu_ms_per_1000"`
}

// Burst is one burst run's release latency.
type Burst struct {
	Run      string  `json:"run"`
	Nodes    int     `json:"nodes"`
	Released int     `json:"released"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Passed   bool    `json:"passed"`
}

func (b *Burst) complete() bool { return b != nil && b.Nodes > 0 && b.Released == b.Nodes }

// Failover is a leader failover as nodes join: from the leader's exit to the other
// replica leading, and to its first release.
type Failover struct {
	Run            string  `json:"run"`
	Nodes          int     `json:"nodes"`
	Released       int     `json:"released"`
	ExitToLeaderS  float64 `json:"exit_to_leader_s"`
	ExitToReleaseS float64 `json:"exit_to_first_release_s"`
	// ReleasedBefore counts releases before the kill (the old leader's).
	ReleasedBefore int    `json:"released_before_exit"`
	Error          string `json:"error,omitempty"`
}

// statusReportPeriod is a kubelet's nodeStatusReportFrequency default: how often each node
// of a live cluster updates its Node though nothing changed.
const statusReportPeriod = 300.0

// WriteJSON writes out/bench-large.json.
func (r *LargeReport) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFile(path, append(data, '\n'))
}

// String is the Markdown, for printing and bench-large.md.
func (r *LargeReport) String() string {
	var sb strings.Builder
	r.WriteMarkdown(&sb)
	return sb.String()
}

// WriteMarkdown writes bench-large.md: one column per size, the empty plane first, then
// the targets at the largest size, the stage breakdowns and the plane's settings.
func (r *LargeReport) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s. Static nodes: profile %d labels, %d annotations, %d images, %d problem conditions; "+
		"burst: %d nodes, %d workload Pods; failover: %d nodes, 2 replicas; idle window %.0f s.\n\n",
		r.Machine, r.Profile.Labels, r.Profile.Annotations, r.Profile.Images, r.Profile.ProblemConditions,
		r.Burst, r.Workloads, r.FailoverNodes, r.IdleS)
	if len(r.Sizes) == 0 {
		fmt.Fprintf(w, "Every figure: %s.\n", notMeasured)
		return
	}
	head, rule := "| static nodes |", "|---|"
	for _, s := range r.Sizes {
		head += fmt.Sprintf(" %d |", s.Nodes)
		rule += "---:|"
	}
	fmt.Fprintf(w, "%s\n%s\n", head, rule)
	for _, row := range r.rows() {
		line := "| " + row.name + " |"
		for i := range r.Sizes {
			line += " " + row.cell(i) + " |"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "\n| target (largest size) | measured | met |\n|---|---|---|")
	for _, t := range r.targets() {
		v := t.Verdict()
		if v == "no" {
			v = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Measured, v)
	}
	(&Report{BreakdownMS: r.Breakdowns}).writeBreakdowns(w)
	var errs []string
	for _, s := range r.Sizes {
		for _, e := range s.Errors {
			errs = append(errs, fmt.Sprintf("- %d static nodes: %s", s.Nodes, e))
		}
		if s.Failover != nil && s.Failover.Error != "" {
			errs = append(errs, fmt.Sprintf("- %d static nodes, failover: %s", s.Nodes, s.Failover.Error))
		}
	}
	for _, run := range r.Runs {
		if !run.Passed {
			errs = append(errs, fmt.Sprintf("- run `%s` did not pass: %s", run.Name, strings.Join(run.Failures, "; ")))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\nErrors:\n\n%s\n", strings.Join(errs, "\n"))
	}
	fmt.Fprintf(w, "\nPlane settings:\n\n- %s\n", strings.Join(r.Plane, "\n- "))
}

type largeRow struct {
	name string
	cell func(i int) string
}

// rows are the table's rows; a cell is "not measured" unless its figure was.
func (r *LargeReport) rows() []largeRow {
	at := func(f func(s *LargeSize) string) func(int) string {
		return func(i int) string { return f(&r.Sizes[i]) }
	}
	static := func(f func(s *LargeSize) string) func(int) string {
		return func(i int) string {
			if r.Sizes[i].Nodes == 0 {
				return "–"
			}
			return f(&r.Sizes[i])
		}
	}
	empty := &r.Sizes[0]
	rows := []largeRow{
		{"time to register them (s)", static(func(s *LargeSize) string { return positive("%.0f", s.FillS) })},
		{"then, until the plane was quiet, before the probe (s)", static(func(s *LargeSize) string {
			if s.FillS == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.0f", s.SettleS)
		})},
		{"one Node as stored: protobuf / JSON (bytes)", static(func(s *LargeSize) string {
			if s.NodeProtobufBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%d / %d", s.NodeProtobufBytes, s.NodeJSONBytes)
		})},
		{"etcd database (MiB)", static(func(s *LargeSize) string { return mibOr(s.EtcdBytes) })},
		{"static nodes registered, when the fill stopped short", static(func(s *LargeSize) string {
			if s.Reached == 0 {
				return "–"
			}
			return fmt.Sprint(s.Reached)
		})},
		{"RSS after the fill: " + strings.Join(rssNames, " / ") + " (MiB)", static(func(s *LargeSize) string { return rssCell(s.RSS) })},
		{"after the gate run's setup, until the plane was quiet, before the gate started (s)", at(func(s *LargeSize) string {
			if s.SyncS == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.0f", s.SetupSettleS)
		})},
		{"gate: process start to initial list reconciled (s)", at(func(s *LargeSize) string { return positive("%.1f", s.SyncS) })},
		{"CPU in that start (s): gate / " + strings.Join(rssNames, " / "), at(func(s *LargeSize) string {
			if s.SyncS == 0 || s.SyncPlaneCPUS == nil {
				return notMeasured
			}
			return fmt.Sprintf("%.1f / %s", s.SyncCPUS, cpuCell(s.SyncPlaneCPUS))
		})},
		{"gate heap / RSS after sync (MiB)", at(func(s *LargeSize) string {
			if s.HeapBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%d / %d", s.HeapBytes>>20, s.RSSBytes>>20)
		})},
		{"gate heap per static node, over the empty plane's (bytes)", static(func(s *LargeSize) string {
			if s.HeapBytes == 0 || empty.HeapBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%d", perNodeBytes(s.HeapBytes, empty.HeapBytes, s.Nodes))
		})},
		{"gate live heap after sync: MiB, and bytes per static node over the empty plane's", at(func(s *LargeSize) string {
			if s.HeapLiveBytes == 0 {
				return notMeasured
			}
			if s.Nodes == 0 || empty.HeapLiveBytes == 0 {
				return fmt.Sprintf("%d", s.HeapLiveBytes>>20)
			}
			return fmt.Sprintf("%d (%d)", s.HeapLiveBytes>>20, perNodeBytes(s.HeapLiveBytes, empty.HeapLiveBytes, s.Nodes))
		})},
		{"gate idle CPU (% of one core)", at(func(s *LargeSize) string {
			if s.HeapBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.2f", s.IdleCPUPct)
		})},
		{"gate CPU per 1000 Node status reports (ms)", static(func(s *LargeSize) string {
			if s.Updates == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.0f (%d reports)", s.UpdateCPUMSPer1000, s.Updates)
		})},
		{"gate CPU at one status report per node per 5 min (% of one core)", static(func(s *LargeSize) string {
			if s.Updates == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.2f", reportsCPUPct(s.UpdateCPUMSPer1000, s.Nodes))
		})},
		{"burst: the empty plane's warm-up (floor, not in the ratios) p50 / p99 (ms)", at(func(s *LargeSize) string {
			if s.Nodes > 0 {
				return "–"
			}
			return burstCell(s.Warmup)
		})},
		{"burst: gate p50 / p99 (ms)", at(func(s *LargeSize) string { return burstCell(s.Gate) })},
		{"burst: gate p99, populated / empty", static(func(s *LargeSize) string { return burstRatio(s.Gate, empty.Gate) })},
		{"burst: floor p50 / p99 (ms)", at(func(s *LargeSize) string { return burstCell(s.Floor) })},
		{"burst: floor p99, populated / empty", static(func(s *LargeSize) string { return burstRatio(s.Floor, empty.Floor) })},
		{"failover: leader exit to new leader (s)", at(func(s *LargeSize) string { return s.Failover.toLeader() })},
		{"failover: leader exit to first release by the new one (s)", at(func(s *LargeSize) string { return s.Failover.toRelease() })},
	}
	for i := range r.Sizes {
		if r.Sizes[i].Before != nil {
			return append(rows, r.beforeRows(at, static)...)
		}
	}
	return rows
}

// beforeRows set the before gate's figures beside the gate under test's.
func (r *LargeReport) beforeRows(at, static func(func(s *LargeSize) string) func(int) string) []largeRow {
	before := func(f func(b, s *GateFigures) string) func(s *LargeSize) string {
		return func(s *LargeSize) string {
			if s.Before == nil || s.Before.HeapBytes == 0 {
				return notMeasured
			}
			return f(s.Before, &s.GateFigures)
		}
	}
	return []largeRow{
		{"before gate: start to initial list reconciled (s)", at(before(func(b, _ *GateFigures) string { return positive("%.1f", b.SyncS) }))},
		{"before gate: heap / RSS after sync (MiB)", at(before(func(b, _ *GateFigures) string {
			return fmt.Sprintf("%d / %d", b.HeapBytes>>20, b.RSSBytes>>20)
		}))},
		{"gate heap, under test / before", at(before(func(b, s *GateFigures) string {
			if s.HeapBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.2f", float64(s.HeapBytes)/float64(b.HeapBytes))
		}))},
		{"before gate: live heap after sync (MiB)", at(before(func(b, _ *GateFigures) string {
			if b.HeapLiveBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%d", b.HeapLiveBytes>>20)
		}))},
		{"gate live heap, under test / before", at(before(func(b, s *GateFigures) string {
			if s.HeapLiveBytes == 0 || b.HeapLiveBytes == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.2f", float64(s.HeapLiveBytes)/float64(b.HeapLiveBytes))
		}))},
		{"before gate: its CPU in that start (s)", at(before(func(b, _ *GateFigures) string { return positive("%.1f", b.SyncCPUS) }))},
		{"before gate: idle CPU (% of one core)", at(before(func(b, _ *GateFigures) string { return fmt.Sprintf("%.2f", b.IdleCPUPct) }))},
		{"before gate: CPU per 1000 Node status reports (ms)", static(before(func(b, _ *GateFigures) string {
			if b.Updates == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%.0f (%d reports)", b.UpdateCPUMSPer1000, b.Updates)
		}))},
		{"before gate: failover, leader exit to new leader (s)", at(func(s *LargeSize) string { return s.BeforeFailover.toLeader() })},
		{"before gate: failover, leader exit to first release (s)", at(func(s *LargeSize) string { return s.BeforeFailover.toRelease() })},
	}
}

// toLeader and toRelease are a failover's cells; nil or zero reads "not measured".
func (f *Failover) toLeader() string {
	if f == nil {
		return notMeasured
	}
	return positive("%.1f", f.ExitToLeaderS)
}

func (f *Failover) toRelease() string {
	if f == nil {
		return notMeasured
	}
	return positive("%.1f", f.ExitToReleaseS)
}

// targets are the targets, judged at the largest size the fill reached.
func (r *LargeReport) targets() []target {
	if len(r.Sizes) == 0 {
		return nil
	}
	last, empty := &r.Sizes[len(r.Sizes)-1], &r.Sizes[0]
	for i := len(r.Sizes) - 1; i > 0 && last.Reached > 0; i-- {
		last = &r.Sizes[i-1] // a size the fill did not reach was not measured
	}
	at := fmt.Sprintf(" (%d static nodes)", last.Nodes)
	var out []target
	heap := target{Name: "gate heap ≤ 300 MiB" + at, Measured: notMeasured}
	if last.HeapBytes > 0 {
		heap.Measured, heap.Met = mib(last.HeapBytes), last.HeapBytes <= 300<<20
	}
	sync := target{Name: "gate start to synced ≤ 30 s" + at, Measured: notMeasured}
	if last.SyncS > 0 {
		sync.Measured, sync.Met = fmt.Sprintf("%.1f s", last.SyncS), last.SyncS <= 30
	}
	idle := target{Name: "gate idle CPU ≤ 1 % of one core" + at, Measured: notMeasured}
	if last.HeapBytes > 0 {
		idle.Measured, idle.Met = fmt.Sprintf("%.2f %%", last.IdleCPUPct), last.IdleCPUPct <= 1
	}
	p99 := target{Name: "gate release p99, populated / empty ≤ 1.2" + at, Measured: burstRatio(last.Gate, empty.Gate)}
	if p99.Measured != notMeasured && last.Nodes > 0 {
		p99.Met = last.Gate.P99/empty.Gate.P99 <= 1.2
	} else {
		p99.Measured = notMeasured
	}
	return append(out, heap, sync, idle, p99)
}

// perNodeBytes is the heap a static node adds: over the empty plane's, per node.
func perNodeBytes(heap, empty uint64, nodes int) int64 {
	if nodes <= 0 {
		return 0
	}
	return (int64(heap) - int64(empty)) / int64(nodes)
}

// reportsCPUPct is the gate's CPU, in percent of one core, for nodes that each report
// their status once per statusReportPeriod, at msPer1000 CPU ms per 1000 reports.
func reportsCPUPct(msPer1000 float64, nodes int) float64 {
	return round2(float64(nodes) / statusReportPeriod * msPer1000 / 1000 / 1000 * 100)
}

// rssNames are the processes whose memory the report shows, in its order.
var rssNames = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", simulatorProcess}

// cpuCell is each of rssNames' CPU seconds.
func cpuCell(cpu map[string]float64) string {
	cells := make([]string, len(rssNames))
	for i, name := range rssNames {
		cells[i] = fmt.Sprintf("%.1f", cpu[name])
	}
	return strings.Join(cells, " / ")
}

func rssCell(rss map[string]uint64) string {
	if len(rss) == 0 {
		return notMeasured
	}
	cells := make([]string, len(rssNames))
	for i, name := range rssNames {
		cells[i] = mibOr(rss[name])
	}
	return strings.Join(cells, " / ")
}

func burstCell(b *Burst) string {
	if !b.complete() {
		if b != nil && b.Nodes > 0 {
			return fmt.Sprintf("%s (%d of %d released)", notMeasured, b.Released, b.Nodes)
		}
		return notMeasured
	}
	return fmt.Sprintf("%.0f / %.0f", b.P50, b.P99)
}

func burstRatio(b, empty *Burst) string {
	if !b.complete() || !empty.complete() || empty.P99 <= 0 {
		return notMeasured
	}
	return fmt.Sprintf("%.2f", b.P99/empty.P99)
}

func positive(format string, v float64) string {
	if v <= 0 {
		return notMeasured
	}
	return fmt.Sprintf(format, v)
}

func mibOr(b uint64) string {
	if b == 0 {
		return notMeasured
	}
	return fmt.Sprint(b >> 20)
}

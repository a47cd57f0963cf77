package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestScenarios runs the scenario suite with the gate in-process: each must meet its own
// expect. This is the race-condition regression suite CI runs. The scenarios that cannot
// share a plane run in TestExclusive, on a plane of their own; the rest share this one in
// parallel (go test -parallel bounds how many at once), each isolated by namespace, node
// names and label.
func TestScenarios(t *testing.T) {
	r, scs := suite(t)
	for _, sc := range scs {
		if sc.Exclusive() {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			runPassing(t, r, sc)
		})
	}
}

// suite loads every scenario in scenarios/ and a runner with the gate in-process on this
// process's plane.
func suite(t *testing.T) (*Runner, []*scenario.Scenario) {
	t.Helper()
	rc := sharedPlane(t)
	scs, err := scenario.LoadAll([]string{"../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{Gate: gateundertest.InProcess, Plane: plane})
	if err != nil {
		t.Fatal(err)
	}
	return r, scs
}

// runPassing runs the scenario and fails the test unless it meets its expect.
func runPassing(t *testing.T, r *Runner, sc *scenario.Scenario) {
	t.Helper()
	res, err := r.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	assertPassed(t, res)
}

// TestNegativeControls: every invariant has a run in which the checker must report a
// violation. A checker that cannot fail proves nothing.
func TestNegativeControls(t *testing.T) {
	rc := sharedPlane(t)
	for _, nc := range negativeControls {
		sc := loadScenario(t, nc.file)
		if changesPlane(sc) {
			continue // in TestExclusive
		}
		if sc.Exclusive() {
			// A large burst runs alone, before the parallel controls are released: beside
			// them, autoscale-burst's (200 nodes, 1000 Pods, no gate) slowed the shared
			// plane's requests to seconds, and suspend-during-burst's control saw no init
			// Pod Ready within its whole window.
			t.Run(nc.name(), func(t *testing.T) { nc.caught(t, rc) })
			continue
		}
		t.Run(nc.name(), func(t *testing.T) {
			t.Parallel()
			nc.caught(t, rc)
		})
	}
}

// negativeControl is a scenario file made to fail: run with gate (in-process if empty) and
// mutate, the checker must report want.
type negativeControl struct {
	file   string
	gate   gateundertest.Mode
	mutate func(*scenario.Scenario)
	want   string // a violation kind, or a failure text
}

func (nc negativeControl) name() string { return nc.file + "/" + nc.want }

// caught runs the control on the plane at rc and fails the test unless the checker
// reports what the control wants.
func (nc negativeControl) caught(t *testing.T, rc *rest.Config) {
	t.Helper()
	mode := nc.gate
	if mode == "" {
		mode = gateundertest.InProcess
	}
	res := runFile(t, rc, nc.file, Options{Gate: mode, Plane: plane, StopWhenCaught: nc.want}, nc.mutate)
	if res.Passed {
		t.Fatalf("%s passed; the checker missed %s. What the recorder saw, by resourceVersion:\n%s", res.Name, nc.want, recordedMarks(res.Records))
	}
	found, first := 0, int64(-1)
	for _, v := range res.Violations {
		if v.Kind == nc.want {
			found++
			if first < 0 || v.AtMS < first {
				first = v.AtMS
			}
		}
	}
	for _, f := range res.Failures {
		if strings.Contains(f, nc.want) {
			found++
		}
	}
	if found == 0 {
		t.Fatalf("%s: want %s, got violations of kinds %q and failures %v", res.Name, nc.want, check.KindsOf(res.Violations), res.Failures)
	}
	if mode == gateundertest.Off && !strings.Contains(res.Reproduce, "--gate off") {
		t.Errorf("reproduce line %q does not name the gate mode", res.Reproduce)
	}
	t.Logf("%s: caught %d × %s (%d workload pods; the first at %d ms of a %d ms run)", res.Name, found, nc.want, res.WorkloadPods, first, res.DurationMS)
}

// recordedMarks is one line per node (at most 20) of the marks the checker judged by: a
// control that was not caught can then be told apart as a checker's miss, a recorder that
// saw a write late, or a run whose hazard never happened.
func recordedMarks(recs []record.NodeRecord) string {
	var b strings.Builder
	for i, rec := range recs {
		if i == 20 {
			fmt.Fprintf(&b, "... %d more nodes\n", len(recs)-i)
			break
		}
		fmt.Fprintf(&b, "%s: created %d tainted %d released %d init ready %d", rec.Name, rec.Created.RV, rec.Tainted.RV, rec.Released.RV, rec.InitReady.RV)
		for _, rb := range rec.Reboots {
			fmt.Fprintf(&b, "; reboot seen %d regated %d reinit %d", rb.Seen.RV, rb.Regated.RV, rb.Reinit.RV)
		}
		var bound []string
		for _, bd := range rec.Bindings {
			if bd.Workload() {
				bound = append(bound, strconv.FormatUint(bd.Mark.RV, 10))
			}
		}
		fmt.Fprintf(&b, "; workload bound at %s\n", strings.Join(bound, " "))
	}
	return b.String()
}

// negativeControls: every invariant has a run in which the checker must report a
// violation. A checker that cannot fail proves nothing. Those whose scenario changes its
// plane run in TestExclusive, the rest in TestNegativeControls.
var negativeControls = []negativeControl{
	// No gate: every pending Pod lands before the node is ready.
	{file: "basic-join", gate: gateundertest.Off, want: check.KindEarlyPod},
	{file: "autoscale-burst", gate: gateundertest.Off, want: check.KindEarlyPod},
	// The Pod guard off: Pods bound by spec.nodeName skip the taint.
	{file: "nodename-bypass", mutate: func(sc *scenario.Scenario) { sc.GateConfig.PodGuard = false }, want: check.KindEarlyPod},
	// failurePolicy Ignore and an outage, without backfill: nodes stay untainted.
	{file: "webhook-down-fail-open-backfill", mutate: func(sc *scenario.Scenario) { sc.GateConfig.Backfill = false }, want: check.KindEarlyPod},
	// Writers that write stale copies without the resourceVersion lose each other's taints.
	{file: "foreign-taint-writers", mutate: func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if w := sc.Timeline[i].TaintWriters; w != nil {
				w.Unguarded = true
			}
		}
		sc.Timeout = 20 * time.Second
	}, want: check.KindForeignTaintLost},
	// A release bound no gate can meet. (Each file appears once: runs of the same
	// scenario would share node names, so they cannot run at the same time.)
	{file: "min-hold", mutate: func(sc *scenario.Scenario) { sc.Expect.ReleasedWithin = time.Millisecond }, want: check.KindLateRelease},
	// The keep policy holds nodes; expecting none stuck must fail.
	{file: "init-never-ready-timeout-keep", mutate: func(sc *scenario.Scenario) { sc.Expect.Stuck = 0 }, want: "never released"},
	// Without the GPU rule, GPU nodes are released when init is ready, before their driver.
	{file: "rules-gpu-pool", mutate: func(sc *scenario.Scenario) { sc.GateConfig.Rules = sc.GateConfig.Rules[:1] }, want: check.KindPrematureRelease},
	// Without the driver among the required components, the GPU nodes are released when
	// init is ready, before their driver.
	{file: "driver-pod-replaced", mutate: func(sc *scenario.Scenario) { sc.GateConfig.Components = sc.GateConfig.Components[:1] }, want: check.KindPrematureRelease},
	// Backfill after an outage under Ignore writes each node once more than its releases.
	{file: "two-rules-one-write-each", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Backfill = true
		sc.Webhook.FailurePolicy = "Ignore"
		sc.Timeline = append(sc.Timeline, scenario.Step{WebhookOutage: &scenario.WebhookOutage{Duration: 3 * time.Second}})
		sc.Expect.Violations = "some" // Pods may land on the untainted nodes first
	}, want: "write(s) per rule release"},
	// Nodes registered with the dry-run rule's taint: the checker must see it.
	{file: "dry-run-rollout", mutate: func(sc *scenario.Scenario) {
		sc.Timeline[0].Join.Taints = []scenario.Taint{{Key: "startup.k8s.io/candidate", Effect: "NoSchedule"}}
		sc.Timeout = 15 * time.Second
	}, want: check.KindDryRunWrote},
	// The nodes register outside the GPU pool with the GPU rule's taint, as by hand: the
	// gate placed nothing there, so it lifts nothing (it marks what it places), and the
	// rule's taint stays on nodes its selector misses.
	{file: "node-leaves-selector", mutate: func(sc *scenario.Scenario) {
		sc.Timeline[0].Join.Labels = nil
		sc.Timeline[0].Join.Taints = []scenario.Taint{{Key: "startup.k8s.io/gpu-initializing", Effect: "NoSchedule"}}
		sc.Timeout = 20 * time.Second
	}, want: check.KindTaintOutsideSelector},
	// The CNI rule as a startup rule: nothing re-taints and nothing guards; Pods land on
	// nodes whose agent is unready. The hazard needs the nodes released before the agent
	// goes unready, and a loaded machine releases them late, so the outage and the Pods
	// come 10 s later than in the scenario. The agent then stays unready to the end
	// (the ready step is dropped), so that every Pod bound after the outage counts and a
	// short window cannot pass without one.
	{file: "continuous-cni-unready", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[1].Mode = rule.Startup
		var timeline []scenario.Step
		for _, s := range sc.Timeline {
			if s.InitPod != nil && s.InitPod.State == "ready" {
				continue
			}
			if s.Join == nil {
				s.At += 10 * time.Second
			}
			timeline = append(timeline, s)
		}
		sc.Timeline = timeline
		sc.Timeout += 10 * time.Second
	}, want: check.KindBoundWhileUnready},
	// No settle time: every flap the gate sees becomes a re-taint and a release, two writes
	// each. The spells last 2s, not 300ms: on a busy machine the control once passed, the
	// gate having read its cache only after each spell's end had arrived too, so that it saw
	// every Pod ready again and wrote nothing.
	{file: "continuous-flap", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[1].SettleTime = metav1.Duration{Duration: time.Millisecond}
		for i := range sc.Timeline {
			if p := sc.Timeline[i].InitPod; p != nil && p.State == scenario.InitPodFlap {
				p.Every = 2 * time.Second
			}
		}
	}, want: "write(s) per rule release"},
	// No out-of-service rule: the preempted node's StatefulSet Pod stays Terminating and
	// its replacement never starts within the window.
	{file: "spot-preemption-out-of-service", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules = sc.GateConfig.Rules[:1]
	}, want: check.KindReplacementLate},
	// A rule that reads one condition of two taints (and evicts) the nodes that match one.
	{file: "condition-taint-regex", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[1].Match = sc.GateConfig.Rules[1].Match[:1]
	}, want: check.KindTaintedWithoutMatch},
	// No budget to speak of: every matching node is tainted.
	{file: "noexecute-budget", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[1].MaxTainted = ptr.To(intstr.FromString("100%"))
	}, want: check.KindBudgetExceeded},
	// The NoExecute rule out of dry run evicts.
	{file: "condition-dry-run", mutate: func(sc *scenario.Scenario) { sc.GateConfig.Rules[2].DryRun = false }, want: check.KindEvicted},
	// onReboot: ignore gates nothing after a reboot: the Pods that arrive while the init Pods
	// run again land there.
	// The init Pods take 30 s here: on a loaded machine the scale step's Pods can take more
	// than the scenario's 5 s to be created and bound, and would land after the window.
	{file: "node-reboot-regate", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[0].OnReboot = rule.RebootIgnore
		sc.Expect.Events = nil // no re-gate, so no StartupGateRegated: the violation must be what fails the run
		sc.Init[0].Ready = scenario.PodTimeline{Mode: scenario.ModeReady, After: 30 * time.Second}
		sc.Timeout += time.Minute
	}, want: check.KindBoundBeforeReinit},
	// The CSI driver not among the components: nodes released before it is Ready.
	{file: "components-own-labels", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[0].Components = sc.GateConfig.Rules[0].Components[:1]
	}, want: check.KindPrematureRelease},
	// Renamed to a rule that ignores reboots: nothing takes the rebooted nodes back, and the
	// Pods that arrive during the warm-up land.
	{file: "rule-renamed-reboot", mutate: func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if e := sc.Timeline[i].EditRule; e != nil {
				e.OnReboot = string(rule.RebootIgnore)
			}
		}
		sc.Expect.Events = nil
		sc.Init[0].Ready = scenario.PodTimeline{Mode: scenario.ModeReady, After: 30 * time.Second}
		sc.Timeout += time.Minute
	}, want: check.KindBoundBeforeReinit},
	// Renamed with a maxHold of 1s, counted from the re-gate as it should be: the rule
	// times out and releases the nodes a second after their re-gate, and the Pods that
	// arrive during the warm-up (10 s, so that a loaded machine cannot close the window)
	// land. No maxHold before the rename, so that the first hold waits out that warm-up.
	{file: "rule-renamed-while-regated", mutate: func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if e := sc.Timeline[i].EditRule; e != nil {
				e.MaxHold = ptr.To(time.Second)
			}
		}
		sc.Expect.Events = nil
		sc.Init[0].Ready = scenario.PodTimeline{Mode: scenario.ModeReady, After: 10 * time.Second}
		sc.GateConfig.Rules[0].MaxHold.Duration = 0
		sc.Timeout += time.Minute
	}, want: check.KindBoundBeforeReinit},
	// The NodePool without the gate's taint in startupTaints: Karpenter takes the taint for
	// permanent and launches again for the Pods it thinks cannot fit the held nodes.
	{file: "karpenter-scale-up", mutate: func(sc *scenario.Scenario) {
		sc.Autoscaler.Karpenter.StartupTaints = nil
	}, want: check.KindNodeClaimsRedundant},
	// The default key, outside readiness.k8s.io/ and undeclared: the same redundant launches.
	{file: "karpenter-readiness-prefix", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Taint.Key = config.DefaultTaintKey
	}, want: check.KindNodeClaimsRedundant},
	// The NodePool without the gate's taint in startupTaints: Karpenter counts the held
	// nodes as initialized and, running nothing, as empty, and consolidates them.
	// Karpenter disrupts one node at a time, each after it has validated the candidate for
	// a while, so the hold is made long enough for that on a loaded machine.
	{file: "karpenter-consolidation", mutate: func(sc *scenario.Scenario) {
		sc.Autoscaler.Karpenter.StartupTaints = nil
		sc.Init[0].Ready.After = time.Minute
	}, want: check.KindDisruptedWhileHeld},
	// keep instead of replace: the two nodes that never warm stay held, empty, for good.
	{file: "karpenter-replace", mutate: func(sc *scenario.Scenario) {
		r := &sc.GateConfig.Rules[0]
		r.TimeoutPolicy, r.MaxReplacing, r.ReplaceStopAfter, r.ReplaceBackoff = rule.TimeoutKeep, 0, 0, metav1.Duration{}
		sc.Timeout = 70 * time.Second // past the nodes' maxHold: held for good, not waiting
	}, want: "gated nodes never released"},
	// No storm guard to speak of: every replacement times out and is replaced again, and
	// the NodeClaims pass what the guard allows.
	{file: "karpenter-replace-storm", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[0].ReplaceStopAfter = 100
	}, want: check.KindNodeClaimsRedundant},
	// The gate killed after the mark and never started again: the marked node's NodeClaim is
	// never deleted, and it stays held (the crash fell on the mark, or nothing would).
	{file: "karpenter-replace-restart", mutate: func(sc *scenario.Scenario) {
		sc.Timeline[0].CrashAtWrite.RestartAfter = 10 * time.Minute
		sc.Timeout = 90 * time.Second
	}, want: "gated nodes never released"},
	// The NodePool without the gate's taint in startupTaints, and the hold long: Karpenter
	// counts the held nodes that never warm as initialized and empty, and consolidates
	// them before the gate would replace them. It also launches for the Pods it thinks the
	// held nodes cannot take (22 nodes in CI), and its default budget disrupts 10% of them
	// at a time, the held two among the rest: CI saw them still there at the 2-minute
	// timeout. The run ends once one is gone (StopWhenCaught), so the longer timeout costs
	// only a miss.
	{file: "karpenter-replace-consolidation", mutate: func(sc *scenario.Scenario) {
		sc.Autoscaler.Karpenter.StartupTaints = nil
		sc.GateConfig.Rules[0].MaxHold = metav1.Duration{Duration: 10 * time.Minute}
		sc.Timeout = 5 * time.Minute
	}, want: check.KindDisruptedWhileHeld},
	// The rule suspended from after the release, before Karpenter registers the node, past
	// the run's end: nothing takes the taint Karpenter puts back off again.
	{file: "karpenter-registers-after-release", mutate: func(sc *scenario.Scenario) {
		sc.Timeout = time.Minute
		sc.Timeline = append(sc.Timeline, scenario.Step{At: 10 * time.Second, SuspendRule: &scenario.SuspendRule{Rule: "default", For: sc.Timeout}})
	}, want: check.KindStuckAfterRegistration},
	// The gate up through the reboot, and the rule suspended once the taint is back: the
	// suspended rule never releases, though the init Pods are Ready again on the new boot.
	{file: "reboot-gate-down", mutate: func(sc *scenario.Scenario) {
		sc.Timeline = slices.DeleteFunc(sc.Timeline, func(s scenario.Step) bool { return s.GateCrash != nil })
		sc.Timeline = append(sc.Timeline, suspendOnceRegated())
	}, want: check.KindHeldAfterReinit},
	{file: "reboot-suspended-resumed", mutate: func(sc *scenario.Scenario) {
		sc.Timeline = slices.DeleteFunc(sc.Timeline, func(s scenario.Step) bool { return s.EditRule != nil })
		sc.Timeline = append(sc.Timeline, suspendOnceRegated())
	}, want: check.KindHeldAfterReinit},
	{file: "reboot-onreboot-toggled", mutate: func(sc *scenario.Scenario) {
		last := sc.Timeline[len(sc.Timeline)-1].EditRule
		last.OnReboot, last.Suspend = "", ptr.To(true)
	}, want: check.KindHeldAfterReinit},
	{file: "reboot-twice-regated", mutate: func(sc *scenario.Scenario) {
		sc.Timeline = append(sc.Timeline, suspendOnceRegated())
	}, want: check.KindHeldAfterReinit},
	// No exclusion: the gate's own pool is gated too, so while every replica is down the
	// webhook refuses its nodes, which the gate would need to come back on: the deadlock.
	{file: "all-replicas-down", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Exclude = nil
	}, want: check.KindGatePoolRefused},
	// A grace period past the run's end: the removed rule's taint, which no rule in force
	// holds, is still on.
	{file: "rule-removed-while-holding", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.OrphanGracePeriod.Duration = 10 * time.Minute
		sc.Expect.Events = nil
	}, want: check.KindStranded},
	{file: "rule-renamed-rekeyed", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.OrphanGracePeriod.Duration = 10 * time.Minute
		sc.Expect.Events = nil
	}, want: check.KindStranded},
	// The gate restarts without the suspension, so it goes on releasing nodes while the rule
	// should be frozen. The window lasts half the run's timeout: on a loaded machine every
	// node may come out of its warm-up after the scenario's 8 s, and a window without a
	// release would let the control pass (a CI run saw that). It must still end before the
	// timeout, when the run stops its steps and a suspension never resumed is not judged.
	{file: "suspend-during-burst", mutate: func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if s := sc.Timeline[i].SuspendRule; s != nil {
				s.Unchanged = true
				s.For = sc.Timeout / 2
			}
		}
	}, want: check.KindWroteWhileSuspended},
}

// suspendOnceRegated is a step that suspends the rule named default for good once the nodes
// of the last reboot are re-gated.
func suspendOnceRegated() scenario.Step {
	return scenario.Step{AfterRegated: true, EditRule: &scenario.EditRule{Rule: "default", Suspend: ptr.To(true)}}
}

// TestPolicyMode runs scenarios with --gate policy. The fail-open outage scenario is run
// without backfill on purpose: a webhook outage cannot touch the in-apiserver policy, so
// the window that lets early Pods in under the webhook (see TestNegativeControls) is gone.
func TestPolicyMode(t *testing.T) {
	rc := sharedPlane(t)
	for _, file := range []string{"basic-join", "webhook-down-fail-open-backfill"} {
		t.Run(file, func(t *testing.T) {
			res := runFile(t, rc, file, Options{Gate: gateundertest.Policy}, func(sc *scenario.Scenario) {
				sc.GateConfig.Backfill = false
				sc.Expect.AtLeast.Backfilled = 0 // the policy taints at CREATE: nothing to backfill
			})
			assertPassed(t, res)
		})
	}
}

// TestKubeconfigBackend points the kubeconfig backend at the running embedded plane.
func TestKubeconfigBackend(t *testing.T) {
	sharedPlane(t)
	kb := &controlplane.Kubeconfig{Path: plane.Kubeconfig()}
	rc, err := kb.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kb.Stop() })
	assertPassed(t, runFile(t, rc, "basic-join", Options{Gate: gateundertest.InProcess}, nil))
}

// changesPlane reports whether the scenario changes the plane it runs on: its
// controller-manager, or what an autoscaler does there (one Karpenter acts on every
// NodePool and pending Pod of the plane, so two controls running at once would each
// launch nodes for the other).
func changesPlane(sc *scenario.Scenario) bool {
	return sc.Plane != nil || sc.Autoscaler != nil
}

// loadScenario loads scenarios/FILE.yaml.
func loadScenario(t *testing.T, file string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../scenarios/" + file + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// runFile loads scenarios/FILE.yaml, lets mutate adjust it, and runs it.
func runFile(t *testing.T, rc *rest.Config, file string, opts Options, mutate func(*scenario.Scenario)) *report.Result {
	t.Helper()
	sc := loadScenario(t, file)
	if mutate != nil {
		mutate(sc)
	}
	r, err := NewRunner(rc, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestKindBackend needs a container engine; the CI machines have none.
func TestKindBackend(t *testing.T) {
	if err := controlplane.KindAvailable(); err != nil {
		t.Skipf("kind backend not runnable here: %v", err)
	}
	k := &controlplane.Kind{ClusterName: "startupgate-test"}
	t.Cleanup(func() { _ = k.Stop() })
	if _, err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func assertPassed(t *testing.T, res *report.Result) {
	t.Helper()
	if !res.Passed {
		for _, v := range res.Violations {
			t.Logf("violation: %s node=%s pod=%s %s", v.Kind, v.Node, v.Pod, v.Detail)
		}
		t.Fatalf("%s failed: %v\nreproduce: %s", res.Name, res.Failures, res.Reproduce)
	}
	t.Logf("%s: %d nodes released, release latency p50 %.0fms p99 %.0fms, wall %dms",
		res.Name, res.Released, res.ReleaseLatencyMS.P50, res.ReleaseLatencyMS.P99, res.DurationMS)
}

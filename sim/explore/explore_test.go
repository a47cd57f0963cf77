package explore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

func loadSuite(t *testing.T) []*scenario.Scenario {
	t.Helper()
	scs, err := scenario.LoadAll([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

// TestPlan: a plan perturbs every scenario the explorer applies to with every kind that
// applies to it, each case adding exactly one step to its base (a transition: one per edit,
// one to three), crash points only within the base's writes; the same seed gives the same
// plan.
func TestPlan(t *testing.T) {
	scs := loadSuite(t)
	writes := map[string]int{}
	for _, sc := range scs {
		writes[sc.Name] = 5
	}
	plan := Plan(scs, writes, 3, 0, 7)
	kinds, bases := map[Kind]int{}, map[string]bool{}
	for _, c := range plan {
		kinds[c.Kind]++
		bases[c.Base] = true
		i := slices.IndexFunc(scs, func(sc *scenario.Scenario) bool { return sc.Name == c.Base })
		added := addedSteps(scs[i], c.Scenario)
		if want := max(1, len(c.Fields)); len(added) != want || len(c.Fields) > 3 {
			t.Errorf("%s %s: %d steps added, want %d (fields %v)", c.Kind, c.Base, len(added), want, c.Fields)
		}
		for _, st := range added {
			if st.Action() == nil {
				t.Errorf("%s %s: an added step has no one action", c.Kind, c.Base)
			}
		}
		if (c.Kind == CrashBefore || c.Kind == CrashAfter) && (c.Index < 1 || c.Index > 5) {
			t.Errorf("%s %s: crash point at write %d of 5", c.Kind, c.Base, c.Index)
		}
		// Both stop every replica: a crash point, and an edit that restarts them with the new
		// rules. The outage is judged alike.
		if (c.Kind == CrashBefore || c.Kind == CrashAfter || c.Kind == Transition) && !slices.Equal(c.DownOnly, gateDown) {
			t.Errorf("%s %s: down-only kinds %v, want %v", c.Kind, c.Base, c.DownOnly, gateDown)
		}
		if !Applies(scs[i]) {
			t.Errorf("%s: perturbed, though the explorer does not apply to it", c.Base)
		}
		if c.Kind == Transition {
			checkEdits(t, scs[i], c, added)
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no case of kind %s", k)
		}
	}
	t.Logf("%d cases over %d scenarios: %v", len(plan), len(bases), kinds)
	again := Plan(scs, writes, 3, 0, 7)
	what := func(cs []Case) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Base+" "+c.What)
		}
		return out
	}
	if diff := cmp.Diff(what(plan), what(again)); diff != "" {
		t.Errorf("the same seed planned otherwise (-first +second):\n%s", diff)
	}
	if base := scs[0].Timeline; len(base) != len(loadSuite(t)[0].Timeline) {
		t.Errorf("planning changed a base scenario's timeline")
	}
}

// addedSteps are the steps of perturbed that its base lacks.
func addedSteps(base, perturbed *scenario.Scenario) []scenario.Step {
	var out []scenario.Step
	for _, s := range perturbed.Timeline {
		if !slices.ContainsFunc(base.Timeline, func(b scenario.Step) bool { return reflect.DeepEqual(b, s) }) {
			out = append(out, s)
		}
	}
	return out
}

// TestGeneratedEdits: the transitions' edits cover every field of a rule (Fields), on the
// scenarios with the top-level default rule as on those with rules, single and in
// sequences, and every sequence applied to its scenario's config validates.
func TestGeneratedEdits(t *testing.T) {
	scs := loadSuite(t)
	fields, lengths, bases := map[string]int{}, map[int]int{}, map[string]bool{}
	for _, c := range Plan(scs, nil, 12, 0, 3) {
		if c.Kind != Transition {
			continue
		}
		bases[c.Base] = true
		lengths[len(c.Fields)]++
		for _, f := range c.Fields {
			fields[f]++
		}
		cfg := c.Scenario.GateConfig
		cfg.Rules = slices.Clone(cfg.Rules)
		for _, st := range addedSteps(scs[slices.IndexFunc(scs, func(sc *scenario.Scenario) bool { return sc.Name == c.Base })], c.Scenario) {
			if _, ok := st.EditRule.Apply(&cfg, func(s string) string { return s }); !ok {
				t.Errorf("%s: %s: the edit names no rule of the config", c.Base, c.What)
			}
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %s: %v", c.Base, c.What, err)
		}
	}
	for _, f := range Fields {
		if fields[f] == 0 {
			t.Errorf("no edit of %s", f)
		}
	}
	defaultRule := 0
	for _, sc := range scs {
		if bases[sc.Name] && len(sc.GateConfig.Rules) == 0 {
			defaultRule++
		}
	}
	if defaultRule == 0 || lengths[2]+lengths[3] == 0 {
		t.Errorf("%d scenarios of the default rule edited, sequences %v: want some of each", defaultRule, lengths)
	}
	t.Logf("edits by field %v; sequences by length %v; %d scenarios, %d of them the default rule's", fields, lengths, len(bases), defaultRule)
}

// TestControls: every invariant has its negative control, built from the suite.
func TestControls(t *testing.T) {
	var got []string
	for _, c := range Controls(loadSuite(t)) {
		got = append(got, c.Control)
	}
	want := []string{"early-pod", "stranded", "held-after-reinit", "foreign-taint-lost", "writes-per-node"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controls (-want +got):\n%s", diff)
	}
}

// TestCaught: a control is caught by a failure that names its invariant, or for the write
// bound by the writes; an ordinary case is violated by any failure or by the bound.
func TestCaught(t *testing.T) {
	for _, tc := range []struct {
		name         string
		r            Result
		caught, viol bool
	}{
		{"control caught", Result{Control: "stranded", Outcome: Outcome{Failures: []string{"expected no violations, found 1 (stranded)"}}}, true, true},
		{"control not caught", Result{Control: "stranded", Outcome: Outcome{Passed: true}}, false, false},
		{"write bound", Result{Control: "writes-per-node", Outcome: Outcome{Passed: true, NodeWrites: MaxWritesPerNode + 1}}, true, true},
		{"case passed", Result{Outcome: Outcome{Passed: true, NodeWrites: 3}}, false, false},
		{"case failed to run", Result{Err: "plane down", Outcome: Outcome{Passed: true}}, false, true},
	} {
		if got := tc.r.Caught(); got != tc.caught {
			t.Errorf("%s: Caught() = %v", tc.name, got)
		}
		if got := tc.r.Violated(); got != tc.viol {
			t.Errorf("%s: Violated() = %v", tc.name, got)
		}
	}
}

// TestJudgedOnly: a crash point's down-window kinds are left out only while the gate was
// down (and DownSlack after); the fail-open kinds only on nodes that registered untainted;
// nodes never released fail the run unless the case leaves them unjudged.
func TestJudgedOnly(t *testing.T) {
	start := time.Unix(1000, 0)
	down := []gateundertest.Down{{From: start.Add(2 * time.Second), To: start.Add(4 * time.Second)}}
	mark := func(rv uint64, ms int64) record.Mark {
		return record.Mark{RV: rv, Time: start.Add(time.Duration(ms) * time.Millisecond)}
	}
	twice := record.NodeRecord{Name: "twice", TaintedAtCreate: true, Reboots: []record.Reboot{
		{BootID: "b2", Seen: mark(10, 1000), Regated: mark(11, 1100)},
		{BootID: "b3", Seen: mark(12, 1200), Regated: mark(13, 1300), Reinit: mark(20, 3500)},
	}}
	once := record.NodeRecord{Name: "once", TaintedAtCreate: true, Reboots: []record.Reboot{
		{BootID: "b2", Seen: mark(10, 1000), Regated: mark(11, 1100), Reinit: mark(20, 3500)},
	}}
	tainted := record.NodeRecord{Name: "tainted", TaintedAtCreate: true, Bindings: []record.Binding{
		{Pod: "ns/web", Mark: mark(30, 3000)}, {Pod: "ns/bypass", Mark: mark(31, 3000), Bypass: true}, {Pod: "ns/bypass-late", Mark: mark(32, 9500), Bypass: true}}}
	res := &report.Result{Start: start, Records: []record.NodeRecord{tainted, {Name: "untainted"}, twice, once}}
	crash := Case{DownOnly: gateDown, UntaintedOnly: failOpen}
	for _, tc := range []struct {
		name   string
		v      check.Violation
		stuck  int
		c      Case
		judged bool
	}{
		{"bound while the gate was down", check.Violation{Kind: check.KindBoundWhileUnready, Node: "tainted", AtMS: 3000}, 0, crash, false},
		{"bound within the slack after the restart", check.Violation{Kind: check.KindBoundWhileUnready, Node: "tainted", AtMS: 4000 + DownSlack.Milliseconds()}, 0, crash, false},
		{"bound after the slack", check.Violation{Kind: check.KindBoundWhileUnready, Node: "tainted", AtMS: 4001 + DownSlack.Milliseconds()}, 0, crash, true},
		{"bound before the crash", check.Violation{Kind: check.KindBoundBeforeReinit, Node: "tainted", AtMS: 1000}, 0, crash, true},
		{"early on a node registered untainted", check.Violation{Kind: check.KindEarlyPod, Node: "untainted", AtMS: 3000}, 0, crash, false},
		{"early on a node tainted at creation", check.Violation{Kind: check.KindEarlyPod, Node: "tainted", Pod: "ns/web", AtMS: 3000}, 0, crash, true},
		// A Pod created bound passes only the Pod guard, which fails open while the gate is
		// down; the scheduler's Pod above is held off by the taint, gate or not.
		{"created bound onto a held node while the gate was down", check.Violation{Kind: check.KindEarlyPod, Node: "tainted", Pod: "ns/bypass", AtMS: 3000}, 0, crash, false},
		{"created bound after the slack", check.Violation{Kind: check.KindEarlyPod, Node: "tainted", Pod: "ns/bypass-late", AtMS: 9500}, 0, crash, true},
		{"created bound while down, not a case that takes the gate down", check.Violation{Kind: check.KindEarlyPod, Node: "tainted", Pod: "ns/bypass", AtMS: 3000}, 0, Case{UntaintedOnly: failOpen}, true},
		{"never released", check.Violation{}, 1, crash, true},
		{"held after a second reboot's warm-up the gate was down for", check.Violation{Kind: check.KindHeldAfterReinit, Node: "twice", RV: 20, AtMS: 3500}, 0, crash, false},
		{"held after a first reboot's warm-up the gate was down for", check.Violation{Kind: check.KindHeldAfterReinit, Node: "once", RV: 20, AtMS: 3500}, 0, crash, true},
		{"held after a second reboot's warm-up, not a crash point", check.Violation{Kind: check.KindHeldAfterReinit, Node: "twice", RV: 20, AtMS: 3500}, 0, Case{UntaintedOnly: failOpen}, true},
		{"never released, left unjudged", check.Violation{}, 1, Case{Unjudged: liftsHold}, false},
	} {
		r := *res
		r.Stuck = tc.stuck
		if tc.v.Kind != "" {
			r.Violations = []check.Violation{tc.v}
		}
		if passed, failures := judgedOnly(&r, tc.c, down); passed == tc.judged {
			t.Errorf("%s: passed %v (%q), want judged %v", tc.name, passed, failures, tc.judged)
		}
	}
}

// TestPlanAlone: an autoscaler's scenarios are explored only with alonePerKind, as many of
// each kind as it says; the replace scenarios' config transitions switch the rule to and
// from replace.
func TestPlanAlone(t *testing.T) {
	scs := loadSuite(t)
	writes := map[string]int{}
	for _, sc := range scs {
		writes[sc.Name] = 5
	}
	for _, c := range Plan(scs, writes, 3, 0, 7) {
		if Alone(c.Scenario) {
			t.Errorf("%s %s planned with alonePerKind 0", c.Kind, c.Base)
		}
	}
	alone := map[string]map[Kind]int{}
	for _, c := range Plan(scs, writes, 3, 2, 7) {
		if !Alone(c.Scenario) {
			continue
		}
		if alone[c.Base] == nil {
			alone[c.Base] = map[Kind]int{}
		}
		alone[c.Base][c.Kind]++
	}
	for _, base := range []string{"karpenter-replace", "karpenter-replace-restart", "karpenter-scale-up"} {
		if n := alone[base][CrashAfter]; n != 2 {
			t.Errorf("%s: %d crash points after a write, want 2 (alonePerKind)", base, n)
		}
	}
	if _, ok := alone["karpenter-replace-storm"]; ok {
		t.Errorf("karpenter-replace-storm, which expects stuck nodes, was planned")
	}
	i := slices.IndexFunc(scs, func(sc *scenario.Scenario) bool { return sc.Name == "karpenter-replace" })
	switched := 0
	for seed := range uint64(100) {
		if c, ok := Make(scs[i], Transition, 1, seed, 5); ok && c.Scenario.Timeline[len(c.Scenario.Timeline)-1].EditRule.TimeoutPolicy == string(rule.TimeoutKeep) {
			switched++
		}
	}
	if switched == 0 {
		t.Errorf("no config transition of 100 switched karpenter-replace's rule from replace to keep")
	}
}

// TestRunAllAlone: a case that runs Alone never runs beside another case.
func TestRunAllAlone(t *testing.T) {
	shared, alone, cases := mixedCases(4, 3)
	if !Alone(alone) || Alone(shared) {
		t.Fatalf("Alone: %v for an autoscaler's scenario, %v for another", Alone(alone), Alone(shared))
	}
	var (
		mu            sync.Mutex
		running, most int
		aloneBeside   bool
	)
	run := func(ctx context.Context, c Case) (Outcome, error) {
		mu.Lock()
		running++
		most = max(most, running)
		if Alone(c.Scenario) && running > 1 {
			aloneBeside = true
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		if Alone(c.Scenario) && running > 1 {
			aloneBeside = true
		}
		running--
		mu.Unlock()
		return Outcome{Passed: true}, nil
	}
	RunAll(context.Background(), cases, 4, run, nil)
	if aloneBeside {
		t.Errorf("a case that runs alone ran beside another")
	}
	if most < 2 {
		t.Errorf("at most %d cases at once: the shared ones did not run in parallel", most)
	}
}

// TestReplayOfACaseNotDrawn: an interrupt leaves cases that never ran, with no scenario; the
// table names them as such instead of crashing (it dereferenced the scenario's file).
func TestReplayOfACaseNotDrawn(t *testing.T) {
	if got := (Case{}).Replay(); !strings.Contains(got, "interrupted") {
		t.Errorf("Replay() of a case with no scenario = %q, want it to say the run was interrupted", got)
	}
}

// TestRunBeside: with a second plane, the cases that run Alone run there, one at a time, and
// beside the shared plane's cases, which never run on the second plane.
func TestRunBeside(t *testing.T) {
	_, _, cases := mixedCases(3, 4)
	var (
		mu                          sync.Mutex
		onShared, onBeside, besides int
		wrongPlane, overlapped      bool
	)
	enter := func(plane *int, c Case, want bool) {
		mu.Lock()
		defer mu.Unlock()
		*plane++
		wrongPlane = wrongPlane || Alone(c.Scenario) != want
		overlapped = overlapped || onBeside > 1
		if onBeside > 0 && onShared > 0 {
			besides++
		}
	}
	leave := func(plane *int) {
		mu.Lock()
		*plane--
		mu.Unlock()
	}
	runner := func(plane *int, want bool) Runner {
		return func(ctx context.Context, c Case) (Outcome, error) {
			enter(plane, c, want)
			time.Sleep(10 * time.Millisecond)
			leave(plane)
			return Outcome{Passed: true}, nil
		}
	}
	RunBeside(context.Background(), cases, 4, runner(&onShared, false), runner(&onBeside, true), nil)
	if wrongPlane {
		t.Error("a case ran on the wrong plane")
	}
	if overlapped {
		t.Error("two cases ran on the second plane at once")
	}
	if besides == 0 {
		t.Error("no case on the second plane ran beside a shared one")
	}
}

// TestRunAllInterrupted: a case still waiting for a slot when the exploration is interrupted
// is not run (its result stays undrawn), rather than run on a cancelled context and counted
// as a violation.
func TestRunAllInterrupted(t *testing.T) {
	sc := &scenario.Scenario{Name: "shared"}
	var cases []Case
	for i := range 8 {
		cases = append(cases, Case{Base: fmt.Sprintf("b%d", i), Scenario: sc})
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := func(ctx context.Context, c Case) (Outcome, error) {
		time.Sleep(50 * time.Millisecond) // the other lanes wait for the slot meanwhile
		cancel()
		return Outcome{Passed: true}, ctx.Err()
	}
	results := RunAll(ctx, cases, 1, run, nil)
	ran := 0
	for _, r := range results {
		if r.Case.Base != "" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("%d cases ran after the interrupt, want only the one running then", ran-1)
	}
}

// mixedCases are twelve cases over a shared scenario and an autoscaler's, which runs Alone:
// every every-th case the autoscaler's, over bases named after the scenario and i%bases.
func mixedCases(every, bases int) (shared, alone *scenario.Scenario, cases []Case) {
	shared = &scenario.Scenario{Name: "shared"}
	alone = &scenario.Scenario{Name: "alone", Autoscaler: &scenario.Autoscaler{Karpenter: &scenario.Karpenter{}}}
	for i := range 12 {
		sc := shared
		if i%every == 0 {
			sc = alone
		}
		cases = append(cases, Case{Base: fmt.Sprintf("%s-%d", sc.Name, i%bases), Scenario: sc})
	}
	return shared, alone, cases
}

// TestLeavesNodePool: an edit of a rule's taint key or effect on a scenario whose Karpenter
// NodePool declares startup taints leaves Karpenter's extra NodeClaims unjudged; any other
// edit, or the same edit without such a NodePool, does not.
func TestLeavesNodePool(t *testing.T) {
	karpenter := &scenario.Scenario{Autoscaler: &scenario.Autoscaler{Karpenter: &scenario.Karpenter{
		StartupTaints: []scenario.Taint{{Key: "startup.k8s.io/initializing", Effect: "NoSchedule"}}}}}
	plain := &scenario.Scenario{}
	for _, tc := range []struct {
		name string
		sc   *scenario.Scenario
		e    scenario.EditRule
		want bool
	}{
		{"effect, NodePool", karpenter, scenario.EditRule{Effect: "PreferNoSchedule"}, true},
		{"key, NodePool", karpenter, scenario.EditRule{TaintKey: "startup.k8s.io/other"}, true},
		{"suspend, NodePool", karpenter, scenario.EditRule{Suspend: ptr.To(true)}, false},
		{"effect, no autoscaler", plain, scenario.EditRule{Effect: "PreferNoSchedule"}, false},
	} {
		if got := leavesNodePool(tc.sc, &tc.e); got != tc.want {
			t.Errorf("%s: leavesNodePool = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// checkEdits: a transition's edits leave every config along the run valid, and never
// rename or remove a rule a step of the base names.
func checkEdits(t *testing.T, base *scenario.Scenario, c Case, added []scenario.Step) {
	t.Helper()
	if !validAlong(base, added) {
		t.Errorf("%s %s: %s leaves a config along the run invalid", c.Kind, c.Base, c.What)
	}
	for _, st := range added {
		e := st.EditRule
		if e != nil && (e.Remove || e.Rename != "") &&
			slices.ContainsFunc(base.Timeline, func(s scenario.Step) bool {
				return s.SuspendRule != nil && s.SuspendRule.Rule == e.Rule || s.EditRule != nil && s.EditRule.Rule == e.Rule
			}) {
			t.Errorf("%s %s: %s, a rule a step of the base names", c.Kind, c.Base, c.What)
		}
	}
}

// TestValidAlong: a drawn edit that leaves a later step of the scenario's own invalid is
// refused. An explore drew "mode: continuous" on reboot-onreboot-toggled, whose own step
// at 15 s sets onReboot: gate again, which a continuous rule cannot take: the run failed on
// the simulator's error, not the gate's. A step that waits may come after a drawn edit
// due later than its offset, so that order is checked too.
func TestValidAlong(t *testing.T) {
	var toggled *scenario.Scenario
	for _, sc := range loadSuite(t) {
		if sc.Name == "reboot-onreboot-toggled" {
			toggled = sc
		}
	}
	if toggled == nil {
		t.Fatal("scenario reboot-onreboot-toggled not found")
	}
	at := func(d time.Duration, e scenario.EditRule) scenario.Step { return scenario.Step{At: d, EditRule: &e} }
	for _, c := range []struct {
		name  string
		drawn []scenario.Step
		valid bool
	}{
		{"maxHold set", []scenario.Step{at(time.Second, scenario.EditRule{Rule: "default", MaxHold: ptr.To(20 * time.Second)})}, true},
		{"mode continuous, then the scenario's onReboot: gate", []scenario.Step{at(1300*time.Millisecond, scenario.EditRule{Rule: "default", Mode: string(rule.Continuous)})}, false},
		// Undone at 3.3 s, before the scenario's first edit may come (6 s).
		{"mode continuous for 2s", []scenario.Step{at(1300*time.Millisecond, scenario.EditRule{Rule: "default", Mode: string(rule.Continuous), For: 2 * time.Second})}, true},
		// Due after the step's offset (15 s), but the step waits for releases and may
		// come later still.
		{"mode continuous after the step's offset", []scenario.Step{at(16*time.Second, scenario.EditRule{Rule: "default", Mode: string(rule.Continuous)})}, false},
	} {
		if got := validAlong(toggled, c.drawn); got != c.valid {
			t.Errorf("%s: validAlong = %v, want %v", c.name, got, c.valid)
		}
	}
}

// Package explore generates perturbed runs of the scenarios and judges each by the
// invariants, after Sieve (OSDI '22) and Acto (SOSP '23), which found bugs in dozens of
// Kubernetes controllers by perturbing what a controller sees and does rather than by
// writing more scenarios. A scenario is one path a node takes; a perturbation moves the
// path off it:
//
//   - crash points: the gate killed just before, or just after, its k-th Node write, for
//     every k of the scenario's run in turn, and restarted;
//   - stale views: the gate's Node or Pod watch delivering late over a window the seed
//     chooses, or cut over and over so that its informers re-list and skip versions;
//   - config transitions: one to three operators' edits, each a pair of valid configs
//     drawn over every field of a rule (the top-level default rule among them): its name,
//     taint key and effect, mode, components, selector, maxHold, timeoutPolicy, onReboot,
//     suspend and dry run, and a rule added or removed, at moments the seed chooses, each
//     undone or not.
//
// Every run is judged by the simulator's invariants (sim/check: no early Pod, no stranded
// node, no foreign taint lost, no release before readiness, ...) and by a bound on the
// Node writes per node; the base scenario's timing expectations are dropped, since a
// crash or a late watch may take a release past them without breaking anything. Each
// invariant has a negative control (Controls), which must be caught.
package explore

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Kind is a kind of perturbation.
type Kind string

// The kinds.
const (
	CrashBefore Kind = "crash-before-write"
	CrashAfter  Kind = "crash-after-write"
	StaleNodes  Kind = "stale-node-view"
	StalePods   Kind = "stale-pod-view"
	Relist      Kind = "relist"
	Transition  Kind = "config-transition"
)

// Kinds are every kind, in the order the table lists them.
var Kinds = []Kind{CrashBefore, CrashAfter, StaleNodes, StalePods, Relist, Transition}

// MaxWritesPerNode bounds the Node writes the gate makes to one node in a run: a release
// per rule, a re-gate and a release per reboot, a few records, retries after crashes. A
// gate that fights another writer, or flaps, writes far more.
const MaxWritesPerNode = 24

// Case is one perturbed run of a base scenario.
type Case struct {
	Base string `json:"base"`
	Kind Kind   `json:"kind"`
	// Index tells the case from the others of its base and kind: the write of a crash
	// point, or the draw of the seeded kinds. Seed is the run's.
	Index int    `json:"index"`
	Seed  uint64 `json:"seed"`
	// What says in words what the perturbation is.
	What string `json:"what"`
	// Fields are the config fields a transition's edits changed, in order.
	Fields []string `json:"fields,omitempty"`
	// Scenario is the perturbed scenario.
	Scenario *scenario.Scenario `json:"-"`
	// Off runs the case with no gate at all: a negative control's.
	Off bool `json:"off,omitempty"`
	// Unjudged are the violation kinds the case does not judge: an edit that takes a rule's
	// hold away on purpose (a selector that matches no node, a dry run, a removal, onReboot
	// ignore, a suspension for good) makes Pods land, and nodes stay unreleased, with no rule
	// in force holding them, which the run's ground truth, written for the rules before the
	// edit, would call early or stuck. Stranded nodes, lost foreign taints, the write bound
	// and the rest are still judged.
	Unjudged []string `json:"unjudged,omitempty"`
	// DownOnly are the violation kinds the case does not judge while the gate is down, after
	// a crash point or for an edit's restart, nor for DownSlack after its restart; outside
	// those windows they are.
	DownOnly []string `json:"down_only,omitempty"`
	// UntaintedOnly are the violation kinds the case does not judge on nodes that registered
	// without the gate's taint (a webhook failing open); on every other node they are.
	UntaintedOnly []string `json:"untainted_only,omitempty"`
}

// DownSlack is how long after a crash point's restart the gate is still taken for down: its
// caches fill and its Pod guard first answers in that time.
const DownSlack = 5 * time.Second

// liftsHold are the kinds an edit that takes a rule's hold away leaves unjudged.
var liftsHold = []string{check.KindEarlyPod, check.KindBoundBeforeReinit, check.KindStuck, check.KindLateRelease,
	check.KindPrematureRelease, check.KindDryRunWrote, check.KindHeldAfterReinit, check.KindStuckAfterRegistration,
	check.KindBoundWhileUnready, check.KindRetaintLate}

// gateDown are the kinds a crash point leaves unjudged while the gate is down (DownOnly): a
// Pod bound to a node that rebooted, or whose continuous requirement failed, then. Only the
// gate closes those windows (its re-gate or re-taint write, and its Pod guard, which fails
// open), and neither turns the node NotReady. Once the gate is back (and DownSlack has
// passed) its guard must deny such a binding again, and the kinds are judged.
var gateDown = []string{check.KindBoundBeforeReinit, check.KindBoundWhileUnready}

// failOpen are the kinds a crash point, a late Node view or a relist leaves unjudged in a
// scenario whose webhook fails open (failurePolicy Ignore): that trades the guarantee for
// availability while the webhook is down, and leaves backfill to race the scheduler for the
// nodes registered then. Whatever delays the gate's sight of those nodes finds only the
// trade (Pods on a node that backfill saw too late, as operations.md says of Ignore).
var failOpen = []string{check.KindEarlyPod, check.KindBusyBackfilled}

// failsOpen returns the kinds a perturbation that delays the gate leaves unjudged in sc on
// the nodes that registered untainted (UntaintedOnly).
func failsOpen(sc *scenario.Scenario) []string {
	if sc.Webhook.FailurePolicy != "Ignore" {
		return nil
	}
	return failOpen
}

// takesHold reports whether an edit takes a rule's hold away from nodes it held, or loosens
// what the hold waits for, on purpose: a selector changed, a dry run, a removal, onReboot
// ignore, a suspension for good, an effect that no longer keeps Pods off, a maxHold or a
// timeout policy that may end holds sooner, fewer components, another mode. A rename, a new
// taint key and an added rule take nothing away: the runs of those are judged in full.
func takesHold(e *scenario.EditRule) bool {
	return e.NodeSelector != nil || e.DryRun != nil && *e.DryRun || e.Remove || e.OnReboot == string(rule.RebootIgnore) ||
		e.Suspend != nil && *e.Suspend && e.For == 0 || e.Effect != "" || e.MaxHold != nil || e.TimeoutPolicy != "" ||
		e.Components != nil || e.Mode != ""
}

// leavesNodePool reports whether the edit gives a rule another taint (key or effect) while
// the scenario's Karpenter NodePool, which the edit leaves alone, declares the taint as it
// was in startupTaints: the mismatch operations.md tells an operator to avoid, which leaves
// Karpenter's copy of the old taint on new nodes and costs extra NodeClaims. Such a run does
// not judge them (the karpenter-replace-restart case with an effect edit launched 15 for 12).
func leavesNodePool(sc *scenario.Scenario, e *scenario.EditRule) bool {
	return sc.Autoscaler != nil && sc.Autoscaler.Karpenter != nil && len(sc.Autoscaler.Karpenter.StartupTaints) > 0 &&
		(e.TaintKey != "" || e.Effect != "")
}

// Replay is the command that runs the case again. A case an interrupt cut short before it
// was drawn has no scenario, and no command.
func (c Case) Replay() string {
	if c.Scenario == nil {
		return "(not drawn: the run was interrupted)"
	}
	return fmt.Sprintf("go run ./cmd/simulate explore --replay %s:%d --seed %d %s", c.Kind, c.Index, c.Seed, c.Scenario.File)
}

// Applies reports whether the explorer perturbs the scenario at all: a scenario that
// expects violations (a negative control), or stuck nodes, or that needs the plane to
// itself for more than its autoscaler (a large burst, a changed controller-manager, an
// apiserver restart), is left to the suite. An autoscaler's scenario runs Alone.
func Applies(sc *scenario.Scenario) bool {
	return sc.Expect.Violations != "some" && sc.Expect.Stuck == 0 && (!sc.Exclusive() || Alone(sc)) && sc.Admission == "" && sc.GateStartsAt == 0
}

// Alone reports whether the scenario's cases need the plane to themselves, one at a time:
// an autoscaler acts on every pending Pod it can place, so another case's Pods beside it
// would get its nodes. Only an autoscaler's scenario is explored so.
func Alone(sc *scenario.Scenario) bool {
	if sc.Autoscaler == nil || sc.Plane != nil || sc.RestartsAPIServer() {
		return false
	}
	s := *sc
	s.Autoscaler = nil
	return !s.Exclusive() // no large burst either
}

// inProcess reports whether the scenario's gate can run in this process, which crash
// points and late watches act on: no step needs a gate process.
func inProcess(sc *scenario.Scenario) bool {
	for _, s := range sc.Timeline {
		if s.GateCrash != nil || s.LeaderFailover != nil {
			return false
		}
	}
	return true
}

// Make builds the case of kind and index for base, with a run seed; writes is how many Node
// writes the base's unperturbed run made (the crash points' range). ok is false when the
// kind does not apply to base.
func Make(base *scenario.Scenario, kind Kind, index int, seed uint64, writes int) (Case, bool) {
	sc := prepare(base)
	c := Case{Base: base.Name, Kind: kind, Index: index, Seed: seed, Scenario: sc}
	// The base's name in the stream: each scenario draws its own edits and moments.
	h := fnv.New64a()
	h.Write([]byte(base.Name))
	rng := rand.New(rand.NewPCG(seed^h.Sum64(), uint64(index)<<8|uint64(slices.Index(Kinds, kind))))
	span := lastStep(base) + 2*time.Second
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(span))) }
	var step scenario.Step
	switch kind {
	case CrashBefore, CrashAfter:
		if !inProcess(sc) || index < 1 || index > writes {
			return c, false
		}
		restart := time.Duration(200+rng.IntN(2800)) * time.Millisecond
		step = scenario.Step{CrashAtWrite: &scenario.CrashAtWrite{Write: index, After: kind == CrashAfter, RestartAfter: restart}}
		c.DownOnly, c.UntaintedOnly = gateDown, failsOpen(sc)
		c.What = fmt.Sprintf("killed %s its write %d, back %s later", map[bool]string{true: "after", false: "before"}[kind == CrashAfter], index, restart)
	case StaleNodes, StalePods:
		if !inProcess(sc) {
			return c, false
		}
		resource := map[Kind]string{StaleNodes: "nodes", StalePods: "pods"}[kind]
		d := scenario.WatchDelay{Resource: resource, Delay: time.Duration(500+rng.IntN(3500)) * time.Millisecond, For: time.Duration(2+rng.IntN(9)) * time.Second}
		step = scenario.Step{At: at(), WatchDelay: &d}
		if kind == StaleNodes {
			c.UntaintedOnly = failsOpen(sc)
		}
		c.What = fmt.Sprintf("%s watch %s late for %s from %s", resource, d.Delay, d.For, step.At.Round(time.Millisecond))
	case Relist:
		d := scenario.WatchDrops{Every: time.Duration(300+rng.IntN(1200)) * time.Millisecond, Duration: time.Duration(3+rng.IntN(8)) * time.Second}
		step = scenario.Step{At: at(), WatchDrops: &d}
		c.UntaintedOnly = failsOpen(sc)
		c.What = fmt.Sprintf("connections cut every %s for %s from %s", d.Every, d.Duration, step.At.Round(time.Millisecond))
	case Transition:
		fields, steps := drawTransition(sc, rng, at)
		if len(steps) == 0 {
			return c, false
		}
		var whats []string
		for _, step := range steps {
			sc.Timeline = append(sc.Timeline, step)
			whats = append(whats, fmt.Sprintf("at %s: %s", step.At.Round(time.Millisecond), describe(step.EditRule)))
			if takesHold(step.EditRule) {
				c.Unjudged = liftsHold
			}
		}
		if slices.ContainsFunc(steps, func(st scenario.Step) bool { return leavesNodePool(sc, st.EditRule) }) {
			c.Unjudged = append(slices.Clone(c.Unjudged), check.KindNodeClaimsRedundant)
		}
		slices.SortStableFunc(sc.Timeline, func(a, b scenario.Step) int { return cmp.Compare(a.At, b.At) })
		// An edit restarts every replica (Reconfigure): the outage is a crash point's.
		c.DownOnly, c.UntaintedOnly = gateDown, failsOpen(sc)
		c.What, c.Fields = strings.Join(whats, "; "), fields
		return c, true
	default:
		return c, false
	}
	sc.Timeline = append(sc.Timeline, step)
	return c, true
}

// prepare copies base for a perturbation: its own timeline and rules, the timing
// expectations dropped (a perturbation may take a release past them without breaking an
// invariant), a short orphan grace, and time to settle after the last step.
func prepare(base *scenario.Scenario) *scenario.Scenario {
	sc := *base
	sc.Timeline = slices.Clone(base.Timeline)
	sc.GateConfig.Rules = slices.Clone(base.GateConfig.Rules)
	sc.GateConfig.OrphanGracePeriod.Duration = 2 * time.Second
	e := &sc.Expect
	e.ReleasedWithin, e.RetaintWithin, e.ReplacementWithin, e.WritesPerRelease = 0, 0, 0, 0
	e.Events, e.EventsMatch, e.AtLeast = nil, nil, scenario.Counters{}
	e.Window = max(e.Window, 10*time.Second)
	sc.Timeout += 30 * time.Second
	return &sc
}

// lastStep is the offset of the scenario's last step.
func lastStep(sc *scenario.Scenario) time.Duration {
	var last time.Duration
	for _, s := range sc.Timeline {
		last = max(last, s.At)
	}
	return last
}

// drawTransition draws edits (edits) and their moments (at), in the order drawn (a later
// edit may name a rule an earlier one renamed or added), until the scenario's own edits,
// met among them, leave every config along the run valid: a drawn mode change can make a
// later step's onReboot one the config refuses. It returns the fields changed and the
// steps; none when no draw of a few fits.
func drawTransition(sc *scenario.Scenario, rng *rand.Rand, at func() time.Duration) ([]string, []scenario.Step) {
	for range 8 {
		es, fields := edits(sc, rng)
		if len(es) == 0 {
			return nil, nil
		}
		times := make([]time.Duration, len(es))
		for i := range times {
			times[i] = at()
		}
		slices.Sort(times)
		steps := make([]scenario.Step, len(es))
		for i, e := range es {
			steps[i] = scenario.Step{At: times[i], EditRule: e}
		}
		if validAlong(sc, steps) {
			return fields, steps
		}
	}
	return nil, nil
}

// validAlong reports whether every config the run can go through is valid with the drawn
// steps among the scenario's own, as the gate's reconfiguration validates it. The drawn
// edits (and their undos) come at their offsets; a step of the scenario that waits (for
// its Pods bound, its nodes released or re-gated) may come any time after its offset, so
// every order of the two the offsets allow is tried, the scenario's in its own order.
func validAlong(sc *scenario.Scenario, drawn []scenario.Step) bool {
	own, ours := changesOf(sc.Timeline, true), changesOf(drawn, false)
	cfg := sc.GateConfig
	cfg.Rules = slices.Clone(cfg.Rules)
	return validOrders(cfg, own, ours, map[*scenario.EditRule]rule.Rule{})
}

// change is an edit, or its undo, at its offset; waits: it may come later.
type change struct {
	at    time.Duration
	edit  *scenario.EditRule
	undo  bool
	waits bool
}

func changesOf(steps []scenario.Step, scenarios bool) []change {
	var out []change
	for _, st := range steps {
		e := st.EditRule
		if e == nil {
			continue
		}
		waits := scenarios && (st.AfterBound || st.AfterReleased || st.AfterRegated)
		out = append(out, change{at: st.At, edit: e, waits: waits})
		if e.For > 0 {
			out = append(out, change{at: st.At + e.For, edit: e, undo: true, waits: waits})
		}
	}
	slices.SortStableFunc(out, func(a, b change) int { return cmp.Compare(a.at, b.at) })
	return out
}

// validOrders applies the next of own or ours, each in turn where the offsets allow it,
// to cfg, and reports whether every order keeps every config valid.
func validOrders(cfg config.Config, own, ours []change, before map[*scenario.EditRule]rule.Rule) bool {
	if len(own) == 0 && len(ours) == 0 {
		return true
	}
	// own[0] may come first unless ours[0] is due before it; ours[0] may come first unless
	// own[0] is due before it and cannot slip.
	if len(own) > 0 && (len(ours) == 0 || own[0].at <= ours[0].at) {
		next, b, ok := applied(cfg, own[0], before)
		if !ok || !validOrders(next, own[1:], ours, b) {
			return false
		}
	}
	if len(ours) > 0 && (len(own) == 0 || own[0].waits || ours[0].at < own[0].at) {
		next, b, ok := applied(cfg, ours[0], before)
		if !ok || !validOrders(next, own, ours[1:], b) {
			return false
		}
	}
	return true
}

// applied is cfg with ch made, and the rules as each edit found them (for its undo); false
// when the edit finds no rule or the result is not valid.
func applied(cfg config.Config, ch change, before map[*scenario.EditRule]rule.Rule) (config.Config, map[*scenario.EditRule]rule.Rule, bool) {
	cfg.Rules = slices.Clone(cfg.Rules)
	if ch.undo {
		ch.edit.Undo(&cfg, before[ch.edit])
		return cfg, before, cfg.Validate() == nil
	}
	was, ok := ch.edit.Apply(&cfg, func(sel string) string { return sel })
	before = maps.Clone(before)
	before[ch.edit] = was
	return cfg, before, ok && cfg.Validate() == nil
}

// edits draws one to three operators' edits of the scenario's rules (the top-level default
// rule named "default"), each a field of a rule changed to another value the config takes,
// checked by applying the sequence to the scenario's config and validating it. It returns
// the edits and the fields they change; none when no rule lasts the run (a step of the base
// removes or renames it). A rule a step of the base names keeps its name: renamed or removed,
// that step would name a rule that no longer runs.
func edits(sc *scenario.Scenario, rng *rand.Rand) ([]*scenario.EditRule, []string) {
	cfg := sc.GateConfig
	cfg.Rules = slices.Clone(cfg.Rules)
	cfg.InRules()
	var out []*scenario.EditRule
	var fields []string
	n := 1 + rng.IntN(3)
	for tries := 0; len(out) < n && tries < 20; tries++ {
		lasting := slices.DeleteFunc(slices.Clone(cfg.Rules), func(r rule.Rule) bool { return !lasts(sc, r.Name) })
		if len(lasting) == 0 {
			break
		}
		r := lasting[rng.IntN(len(lasting))]
		e, field := drawEdit(r, len(lasting), !namedByStep(sc, r.Name), rng)
		next := cfg
		next.Rules = slices.Clone(cfg.Rules)
		if _, ok := e.Apply(&next, func(sel string) string { return sel }); !ok || next.Validate() != nil {
			continue
		}
		// Only the last edit may be undone: its undo then meets only the edits before it,
		// which its check included.
		if len(out) == n-1 && !e.Remove && e.Add == "" && e.Rename == "" && rng.IntN(2) == 0 {
			e.For = time.Duration(2+rng.IntN(8)) * time.Second
		}
		cfg = next
		out, fields = append(out, e), append(fields, field)
	}
	return out, fields
}

// Fields are the config fields a transition's edit may change, each named as the config
// names it (add and remove: a rule).
var Fields = []string{"name", "taint.key", "taint.effect", "mode", "components", "nodeSelector", "maxHold",
	"timeoutPolicy", "onReboot", "suspend", "dryRun", "add", "remove"}

// drawEdit draws one edit of rule r, one of rules that last the run: a field and a new
// value for it (a removal only of one of several, lest a removal by the base leave none).
// renames says whether r may be renamed or removed.
func drawEdit(r rule.Rule, rules int, renames bool, rng *rand.Rand) (*scenario.EditRule, string) {
	e := &scenario.EditRule{Rule: r.Name}
	field := Fields[rng.IntN(len(Fields))]
	switch field {
	case "name":
		if !renames {
			return drawEdit(r, rules, renames, rng)
		}
		e.Rename = r.Name + "-renamed"
	case "taint.key":
		e.TaintKey = r.Taint.Key + "-rekeyed"
	case "taint.effect":
		e.Effect = string(map[bool]corev1.TaintEffect{true: corev1.TaintEffectPreferNoSchedule, false: corev1.TaintEffectNoSchedule}[r.Taint.Effect == corev1.TaintEffectNoSchedule])
	case "mode":
		e.Mode = string(map[bool]rule.Mode{true: rule.Continuous, false: rule.Startup}[r.Mode == "" || r.Mode == rule.Startup])
	case "components":
		e.Components = slices.Clone(r.Components)
		if len(e.Components) > 1 {
			e.Components = e.Components[:len(e.Components)-1]
		} else if len(e.Components) == 1 {
			e.Components[0].Name += "-renamed" // the same Pods, under another name
		}
	case "nodeSelector":
		e.NodeSelector = ptr.To(map[bool]string{true: "startupgate.io/explore-none=true", false: ""}[rng.IntN(2) == 0])
	case "maxHold":
		// Shortened, lengthened, cleared or set: never the value it has.
		values := slices.DeleteFunc([]time.Duration{r.MaxHold.Duration / 2, 2 * r.MaxHold.Duration, 0, 20 * time.Second},
			func(d time.Duration) bool { return d == r.MaxHold.Duration })
		d := values[rng.IntN(len(values))]
		e.MaxHold = &d
	case "timeoutPolicy":
		policies := slices.DeleteFunc([]rule.TimeoutPolicy{rule.TimeoutRelease, rule.TimeoutKeep, rule.TimeoutReplace}, func(p rule.TimeoutPolicy) bool {
			return p == r.TimeoutPolicy || p == "" && r.TimeoutPolicy == rule.TimeoutRelease
		})
		e.TimeoutPolicy = string(policies[rng.IntN(len(policies))])
	case "onReboot":
		e.OnReboot = string(map[bool]rule.RebootPolicy{true: rule.RebootIgnore, false: rule.RebootGate}[r.OnReboot == rule.RebootGate])
	case "suspend":
		e.Suspend = ptr.To(!r.Suspend)
	case "dryRun":
		e.DryRun = ptr.To(!r.DryRun)
	case "add":
		e.Add = r.Name + "-added"
	case "remove":
		if rules < 2 || !renames {
			return drawEdit(r, rules, renames, rng)
		}
		e.Remove = true
	}
	return e, field
}

// lasts reports whether the rule of that name is in force all through the scenario's run:
// no step removes or renames it.
func lasts(sc *scenario.Scenario, name string) bool {
	return !slices.ContainsFunc(sc.Timeline, func(s scenario.Step) bool {
		e := s.EditRule
		return e != nil && e.Rule == name && (e.Remove || e.Rename != "")
	})
}

// namedByStep reports whether a step of the scenario names the rule: a suspension or an
// edit, which would fail on a rule renamed or removed before it.
func namedByStep(sc *scenario.Scenario, name string) bool {
	return slices.ContainsFunc(sc.Timeline, func(s scenario.Step) bool {
		return s.SuspendRule != nil && s.SuspendRule.Rule == name || s.EditRule != nil && s.EditRule.Rule == name
	})
}

// describe says what an edit does.
func describe(e *scenario.EditRule) string {
	var what string
	switch {
	case e.Suspend != nil:
		what = fmt.Sprintf("suspend: %v", *e.Suspend)
	case e.DryRun != nil:
		what = fmt.Sprintf("dryRun: %v", *e.DryRun)
	case e.NodeSelector != nil && *e.NodeSelector == "":
		what = "selector cleared to every node"
	case e.NodeSelector != nil:
		what = "selector narrowed to no node"
	case e.Rename != "":
		what = "renamed " + e.Rename
	case e.TaintKey != "":
		what = "taint key " + e.TaintKey
	case e.Effect != "":
		what = "taint effect " + e.Effect
	case e.Mode != "":
		what = "mode: " + e.Mode
	case e.Components != nil:
		what = fmt.Sprintf("components: %d", len(e.Components))
	case e.MaxHold != nil:
		what = "maxHold: " + e.MaxHold.String()
	case e.OnReboot != "":
		what = "onReboot: " + e.OnReboot
	case e.Remove:
		what = "removed"
	case e.Add != "":
		what = "rule " + e.Add + " added beside it"
	case e.TimeoutPolicy != "":
		what = "timeoutPolicy: " + e.TimeoutPolicy
	}
	what = fmt.Sprintf("rule %s %s", e.Rule, what)
	if e.For > 0 {
		what += fmt.Sprintf(", undone after %s", e.For)
	}
	return what
}

// Runner runs one case; the simulator's runner, as RunSeed does it, with the writes of
// the run's most written node.
type Runner func(ctx context.Context, c Case) (Outcome, error)

// Outcome is what a case's run showed.
type Outcome struct {
	Passed bool `json:"passed"`
	// Failures are the run's failures, as the simulator reports them.
	Failures []string `json:"failures,omitempty"`
	// NodeWrites is the most the gate wrote one node, and which.
	NodeWrites int    `json:"node_writes"`
	Node       string `json:"node,omitempty"`
	// Writes are all the gate's accepted Node writes in the run.
	Writes int `json:"writes"`
	// Violations are each violation the run's judge found, judged or not, in words.
	Violations []string `json:"violations,omitempty"`
	// GuardTimedOut and GuardUnreached are the calls to the run's Pod guard that the
	// apiserver let through unanswered (failurePolicy Ignore) before the run settled: not
	// answered in time, or not reached (the gate down). Only the embedded plane's log tells.
	GuardTimedOut  int `json:"guard_timed_out,omitempty"`
	GuardUnreached int `json:"guard_unreached,omitempty"`
}

// Violated reports whether the outcome breaks an invariant: the run failed, or the gate
// wrote one node more than MaxWritesPerNode times.
func (o Outcome) Violated() bool { return !o.Passed || o.NodeWrites > MaxWritesPerNode }

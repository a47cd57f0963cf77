package rule

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Phase is what `gate status` shows of a node under a rule: its state, or, where several
// states are one lasting phase to an operator (released, whatever record the rule still
// has to write; regated, whichever boot it waits for), that phase. A decision refines two:
// a held node past maxHold under the keep policy is timed-out, a dry run's node would-hold
// or would-release.
type Phase string

// The phases a State does not name itself (Row.Phase), a condition rule's (ConditionPhase),
// and an orphan's.
const (
	PhaseHeld         Phase = "held"
	PhaseTimedOut     Phase = "timed-out"
	PhaseReleased     Phase = "released"
	PhaseRegated      Phase = "regated"
	PhaseWouldHold    Phase = "would-hold"
	PhaseWouldRelease Phase = "would-release"
	PhaseSuspended    Phase = "suspended"
	PhaseOrphaned     Phase = "orphaned"
	PhaseTainted      Phase = "tainted"
	PhaseMatching     Phase = "matching"
	PhaseKept         Phase = "kept"
	PhaseClearing     Phase = "clearing"
	PhaseWouldTaint   Phase = "would-taint"
)

// Quiet says when a state, read from the node alone, leaves nothing to do for a rule that
// does not gate reboots (one that does reads its evidence from the Pods): the controller
// then reads no Pods for the rule.
type Quiet int

// The Quiet values.
const (
	// Busy: the state may ask for a write, or depends on the Pods.
	Busy Quiet = iota
	// Always: nothing to do whatever the Pods.
	Always
	// StartupOnly: nothing to do for a startup rule; a continuous rule watches its
	// requirements.
	StartupOnly
)

// Row is what one state means, in one place: the taint, whether the rule holds the node,
// when it is quiet, what `gate status` shows, and the write it asks for. The state machine's
// table (docs/reference/states.md) is rendered from Table; State.Holds, the controller's
// quiet and `gate status` read it.
type Row struct {
	State State
	// Taint is where the rule's taint stands.
	Taint string
	// Holds: the rule holds the node (a binding that does not tolerate the taint is
	// early); HoldsNote qualifies it for the reader.
	Holds     bool
	HoldsNote string
	Quiet     Quiet
	Phase     Phase
	// Write is the write the state asks for, in words.
	Write string
	// Moves are the transitions out of the state: each write a decision in it may ask for
	// (WriteNone: none) and the state the node is in once it is made. TestTransitions and
	// the replace and condition tests hold the code to them.
	Moves []Move
}

// Move is one transition of the state machine: a write, and the state it leaves the node in.
type Move struct {
	Write Write
	Next  State
}

// stays is the move of a decision that writes nothing.
func stays(s State) Move { return Move{Next: s} }

// Allows reports whether the table has the move out of state s.
func Allows(s State, m Move) bool { return slices.Contains(rows[s].Moves, m) }

// Table is every state of a startup or continuous rule, and the condition rule's, in the
// order a node meets them.
var Table = []Row{
	{State: StateHeld, Taint: "on", Holds: true, Phase: PhaseHeld,
		Write: "release once the requirements hold (or `maxHold` under `release`; under `replace`, the mark of `replacing`)",
		Moves: []Move{stays(StateHeld), {WriteRelease, StateReleased}, {WriteReplace, StateReplacing}}},
	{State: StateHeldRebooted, Taint: "on", Holds: true, Phase: PhaseHeld, Write: "records what is Ready as not counting on the new boot",
		Moves: []Move{{WriteStale, StateHeld}}},
	{State: StateReplacing, Taint: "on", Holds: true, Phase: Phase(StateReplacing),
		Write: "none: `maxHold` passed under `timeoutPolicy: replace`, the node is marked and its NodeClaim deleted; Karpenter removes the node",
		Moves: []Move{stays(StateReplacing)}},
	{State: StateUntainted, Taint: "off", HoldsNote: "backfill's", Quiet: Always, Phase: Phase(StateUntainted), Write: "none",
		Moves: []Move{stays(StateUntainted)}},
	{State: StateJoining, Taint: "another of the gate's", Holds: true, Phase: Phase(StateJoining),
		Write: "puts the rule's taint on too: the rule has no record of the node (added, given a new taint, resumed) while another rule, or an orphan, holds it",
		Moves: []Move{{WriteJoin, StateHeld}}},
	{State: StateAdopting, Taint: "off", Phase: Phase(StateAdopting),
		Write: "records the node as released (a continuous rule: once its requirements hold): the gate released it under another taint's record, whose boot and readiness count",
		Moves: []Move{stays(StateAdopting), {WriteAdopt, StateReleased}, {WriteAdopt, StateRebooted}}},
	{State: StateReleased, Taint: "off", Quiet: StartupOnly, Phase: PhaseReleased, Write: "none (continuous rules: re-taint after `settleTime`)",
		Moves: []Move{stays(StateReleased), {WriteTaint, StateRetainted}}},
	{State: StateRetainted, Taint: "on", Holds: true, Phase: Phase(StateRetainted), Write: "release once the requirements hold again",
		Moves: []Move{stays(StateRetainted), {WriteRelease, StateReleased}}},
	{State: StateReturned, Taint: "on", Holds: true, Phase: Phase(StateReturned),
		Write: "release (Karpenter's copy of the taint, or one the rule put back while it was a continuous rule)",
		Moves: []Move{{WriteRelease, StateReleased}}},
	{State: StateForeign, Taint: "on", Quiet: Always, Phase: Phase(StateForeign), Write: "none: someone else's taint on a released node",
		Moves: []Move{stays(StateForeign)}},
	{State: StateBootUnrecorded, Taint: "off", Phase: PhaseReleased, Write: "records the boot and its readiness (also on a node released by a gate from before the evidence)",
		Moves: []Move{{WriteRecord, StateReleased}}},
	{State: StateRestarted, Taint: "off", Phase: PhaseReleased, Write: "records the readiness of the restarted containers, same boot",
		Moves: []Move{{WriteRecord, StateReleased}}},
	{State: StateRebootedReady, Taint: "off", Phase: PhaseReleased, Write: "records the boot and its readiness: the warm-up ran again unseen",
		Moves: []Move{{WriteRecord, StateReleased}}},
	{State: StateRebooted, Taint: "off", Holds: true, HoldsNote: "the Pod guard denies", Phase: Phase(StateRebooted), Write: "the re-gate",
		Moves: []Move{{WriteRegate, StateRegated}}},
	{State: StateRegated, Taint: "on", Holds: true, Phase: PhaseRegated, Write: "release on fresh readiness",
		Moves: []Move{stays(StateRegated), {WriteRelease, StateReleased}, {WriteReplace, StateReplacing}}},
	{State: StateRebootedAgain, Taint: "on", Holds: true, Phase: PhaseRegated, Write: "waits for the new boot",
		Moves: []Move{{WriteStale, StateRegated}}},
	{State: StateRegateDropped, Taint: "on", Phase: Phase(StateRegateDropped), Write: "removes the taint",
		Moves: []Move{{WriteRemove, StateReleased}}},
	{State: StateRegateRemoved, Taint: "off", Phase: Phase(StateRegateRemoved), Write: "records the boot",
		Moves: []Move{{WriteRecord, StateReleased}}},
	{State: StateLeft, Taint: "on", Phase: Phase(StateLeft), Write: "removes the taint",
		Moves: []Move{{WriteRemove, StateOutside}}},
	{State: StateOutside, Taint: "as is", Quiet: Always, Phase: Phase(StateOutside), Write: "none",
		Moves: []Move{stays(StateOutside)}},
	{State: StateDryRun, Taint: "as is", Phase: PhaseWouldHold, Write: "none: reports what it would do",
		Moves: []Move{stays(StateDryRun), {WriteRelease, StateDryRun}}},
	{State: StateSuspended, Taint: "as is", HoldsNote: "the node stays held while the rule selects it", Phase: PhaseSuspended, Write: "none until resumed",
		Moves: []Move{stays(StateSuspended)}},
	{State: StateCondition, Taint: "on while the conditions match", Phase: Phase(StateCondition), Write: "taints and clears by the conditions (DecideCondition)",
		Moves: []Move{stays(StateCondition)}},
}

// rows indexes Table by state.
var rows = func() map[State]Row {
	out := make(map[State]Row, len(Table))
	for _, r := range Table {
		out[r.State] = r
	}
	return out
}()

// RowOf is the state's row of Table.
func RowOf(s State) Row { return rows[s] }

// Quiet reports whether rule r, in state s read from the node alone, has nothing to do
// (Row.Quiet).
func (r *Rule) Quiet(s State) bool {
	if r.GatesReboots() {
		return false
	}
	switch rows[s].Quiet {
	case Always:
		return true
	case StartupOnly:
		return r.Mode == Startup
	}
	return false
}

// Phases are every phase `gate status` can show: the table's (a condition rule shows its
// own), the two a decision refines, a condition rule's and an orphan's. operations.md's list
// of states names each (go test ./docs).
func Phases() []Phase {
	var out []Phase
	add := func(p Phase) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, r := range Table {
		if r.State != StateCondition {
			add(r.Phase)
		}
	}
	for _, p := range []Phase{PhaseTimedOut, PhaseWouldRelease, PhaseTainted, PhaseMatching, PhaseKept, PhaseClearing, PhaseWouldTaint, PhaseOrphaned} {
		add(p)
	}
	return out
}

// PhaseOf is what `gate status` shows of decision d: its state's phase, a held node past
// maxHold under the keep policy timed-out, a dry run's would-release once its requirements
// hold.
func PhaseOf(d Decision) Phase {
	p := rows[d.State].Phase
	switch {
	case p == PhaseHeld && d.TimedOut && !d.Release:
		return PhaseTimedOut
	case p == PhaseWouldHold && d.Release:
		return PhaseWouldRelease
	}
	return p
}

// ConditionPhase is what `gate status` shows of a condition rule's node, given its decision:
// false when the rule has nothing to say about the node (no match, no taint, or a dry run
// that does not match).
func (r *Rule) ConditionPhase(n *corev1.Node, d ConditionDecision) (Phase, bool) {
	has := r.HasTaint(n)
	switch {
	case r.DryRun && d.Match:
		return PhaseWouldTaint, true
	case r.DryRun:
		return "", false
	case d.Match && has:
		return PhaseTainted, true
	case d.Match:
		return PhaseMatching, true
	case d.Clear && has:
		return PhaseClearing, true
	case has && r.Completed(n):
		return PhaseKept, true
	case has:
		return PhaseTainted, true
	}
	return "", false
}

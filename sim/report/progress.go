package report

import (
	"fmt"
	"time"
)

// Progress is the state of one running scenario, as the runner reports it while the run
// goes: once when it starts, about once a second, and once when it has settled or timed
// out. It is judged later; these are counts, not a verdict.
type Progress struct {
	Scenario string
	Seed     uint64
	Phase    Phase
	Elapsed  time.Duration
	// Nodes is how many nodes the scenario's timeline joins.
	Nodes  int
	Joined int
	// Gated and Released count gated nodes and those released so far; Early counts
	// workload Pods bound to a gated node before its release.
	Gated, Released, Early int
	// Refused counts node registrations admission refused (a fail-closed webhook outage).
	Refused int
}

// Phase is where a run stands.
type Phase int

// Phases of a run.
const (
	Running Phase = iota
	Started
	Settled
	TimedOut
)

// Done reports whether the run has stopped waiting: settled or timed out.
func (p Phase) Done() bool { return p == Settled || p == TimedOut }

// ProgressReceiver takes progress as data. A progress writer that implements it (the
// console of cmd/simulate) gets this instead of a text line.
type ProgressReceiver interface {
	Progress(Progress)
}

// String is the progress as one text line, for a writer that is not a ProgressReceiver.
func (p Progress) String() string {
	line := fmt.Sprintf("  %-36s %6.1fs  joined %4d  released %4d/%-4d  early pods %d",
		p.Scenario, p.Elapsed.Seconds(), p.Joined, p.Released, p.Gated, p.Early)
	if p.Refused > 0 {
		line += fmt.Sprintf("  registrations refused %d", p.Refused)
	}
	return line
}

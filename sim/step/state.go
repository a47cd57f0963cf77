package step

import (
	"sort"
	"sync"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// State is what a run's steps remember, for the steps after them and for the runner: the
// nodes that joined and the join of each, the registrations admission refused, the nodes of
// the last reboot, and the workload replicas asked for. Steps run each in its own
// goroutine, so it takes a lock; its zero value is ready to use.
type State struct {
	mu       sync.Mutex
	joins    map[string]*scenario.Join
	joined   int
	refused  int // registrations refused by admission
	replicas map[string]int32
	// rebooted are the nodes of the last reboot step (AfterRegated waits for them).
	rebooted []string
	// poolRefused are the refused registrations of the gate's own pool (Join.GatePool).
	poolRefused []check.Violation
}

// Want records that a workload is to have n replicas: at setup, and at a scale step.
func (s *State) Want(workload string, n int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replicas == nil {
		s.replicas = map[string]int32{}
	}
	s.replicas[workload] = n
}

// WantPods is how many workload replicas the run has asked for so far.
func (s *State) WantPods() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := 0
	for _, n := range s.replicas {
		want += int(n)
	}
	return want
}

// Nodes lists the names of the nodes registered so far.
func (s *State) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.joins))
	for n := range s.joins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Registrations are how many nodes are registered now, and how many registrations
// admission refused.
func (s *State) Registrations() (joined, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined, s.refused
}

// PoolRefused are the refused registrations of the gate's own pool, as violations.
func (s *State) PoolRefused() []check.Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]check.Violation(nil), s.poolRefused...)
}

// Rebooted are the nodes of the last reboot step that ran.
func (s *State) Rebooted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rebooted
}

func (s *State) joining(name string, j *scenario.Join) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.joins == nil {
		s.joins = map[string]*scenario.Join{}
	}
	s.joins[name] = j
}

func (s *State) join(name string) *scenario.Join {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joins[name]
}

// registered counts a registration (+1) or a node's removal (-1).
func (s *State) registered(delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joined += delta
}

// refusedOne counts a registration admission refused, and keeps pool as a violation if the
// node is of the gate's own pool (nil otherwise).
func (s *State) refusedOne(pool *check.Violation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused++
	if pool != nil {
		s.poolRefused = append(s.poolRefused, *pool)
	}
}

func (s *State) rebooting(nodes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rebooted = nodes
}

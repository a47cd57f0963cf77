package watch

import "github.com/startupgate/startupgate/sim/record"

// RuleSuspended notes that the run had a gate rule suspended over s, as KubeletStopped
// notes a stopped kubelet: the checker judges what the gate did meanwhile.
func (r *Recorder) RuleSuspended(s record.Suspension) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.suspensions = append(r.suspensions, s)
}

// Suspensions are the stretches noted by RuleSuspended.
func (r *Recorder) Suspensions() []record.Suspension {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record.Suspension(nil), r.suspensions...)
}

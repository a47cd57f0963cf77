package gate

import (
	"context"
	"time"
)

// OldestHeld publishes startupgate_oldest_held_seconds every period, on the leader: per rule,
// the age of the hold this process has seen longest. A count of held nodes cannot tell a
// steady scale-up (many nodes, each held for its warm-up) from one node stuck for an hour;
// this can. A hold is timed from when this process first saw it, so a failover restarts the
// clock of the nodes still held.
type OldestHeld struct {
	R     *Reconciler
	Every time.Duration
}

// NeedLeaderElection is true: only the leader decides, and so only it knows what is held.
func (o *OldestHeld) NeedLeaderElection() bool { return true }

// Start publishes at once, then every period, until ctx ends.
func (o *OldestHeld) Start(ctx context.Context) error {
	t := time.NewTicker(o.Every)
	defer t.Stop()
	for {
		o.R.publishOldestHeld()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// publishOldestHeld sets the gauge of every rule: 0 for a rule that holds nothing.
func (r *Reconciler) publishOldestHeld() {
	now := r.Clock.Now()
	for name, age := range r.oldestHeld(now) {
		oldestHeldSeconds.WithLabelValues(name).Set(age.Seconds())
	}
}

// oldestHeld is, per rule of the config, how long its oldest hold has lasted at now.
func (r *Reconciler) oldestHeld(now time.Time) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, rl := range r.Config.EffectiveRules() {
		out[rl.Name] = 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.nodes {
		for name, rs := range st.rules {
			if rs.held && !rs.heldSince.IsZero() {
				out[name] = max(out[name], now.Sub(rs.heldSince))
			}
		}
	}
	return out
}

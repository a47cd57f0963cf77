package step

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// suspendRule restarts the gate with the rule suspended and, after s.For, with it resumed,
// as two edits of the gate's ConfigMap would, and notes to the recorder the Node writes the
// gate made in between.
type suspendRule struct{ *scenario.SuspendRule }

// Run suspends the rule, waits For, and resumes it.
func (s suspendRule) Run(ctx context.Context, env Env) error {
	set := func(suspend bool) func(*config.Config) {
		return func(cfg *config.Config) {
			for i := range cfg.Rules {
				if cfg.Rules[i].Name == s.Rule && !s.Unchanged {
					cfg.Rules[i].Suspend = suspend
				}
			}
		}
	}
	// The scenario's rules, before any edit: the runner scopes their selectors, never their
	// names.
	if !slices.ContainsFunc(env.Scenario().GateConfig.Rules, func(r rule.Rule) bool { return r.Name == s.Rule }) {
		return fmt.Errorf("suspendRule: rule %q is not in gate.rules", s.Rule)
	}
	gate := env.Gate()
	before, err := gate.Reconfigure(ctx, set(true))
	if err != nil {
		return fmt.Errorf("suspending rule %s: %w", s.Rule, err)
	}
	from := record.Mark{Time: time.Now()}
	env.Note("suspendRule: rule %s suspended (unchanged: %v)", s.Rule, s.Unchanged)
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(s.For):
	}
	if !slices.ContainsFunc(gate.Config().Rules, func(r rule.Rule) bool { return r.Name == s.Rule }) {
		// Renamed or removed while suspended: a resume of the old name would change nothing
		// and leave the rule suspended for good, which the run would then call stranded.
		return fmt.Errorf("resuming rule %s: the gate runs no rule of that name now (rules in force: %v)", s.Rule, ruleNames(gate.Config().Rules))
	}
	after, err := gate.Reconfigure(ctx, set(false))
	env.Recorder().RuleSuspended(record.Suspension{Rule: s.Rule, From: from, To: record.Mark{Time: time.Now()}, Writes: after - before})
	if err != nil {
		return fmt.Errorf("resuming rule %s: %w", s.Rule, err)
	}
	env.Note("suspendRule: rule %s resumed", s.Rule)
	return nil
}

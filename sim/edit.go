package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/scenario"
)

// editRule restarts the gate with one rule changed, as an edit of its ConfigMap rolls its
// Pods, and from then on judges the run by the rules in force; with For, it restores the
// rules after it.
func (rn *run) editRule(ctx context.Context, e *scenario.EditRule) error {
	// The rule is looked up inside the change, which Reconfigure makes under its lock: an
	// edit just before this one (an added or renamed rule) has then taken effect.
	var (
		before rule.Rule
		found  bool
		names  []string
	)
	if _, err := rn.harness.Reconfigure(ctx, func(cfg *config.Config) {
		in := *cfg
		in.Rules = slices.Clone(cfg.Rules)
		in.InRules() // the default rule, as a rule of its name
		names = ruleNames(in.Rules)
		if i := slices.IndexFunc(in.Rules, func(r rule.Rule) bool { return r.Name == e.Rule }); i >= 0 {
			before, found = in.Rules[i], true
			edit(cfg, e, rn.sc.Name)
		}
	}); err != nil {
		return fmt.Errorf("editing rule %s: %w", e.Rule, err)
	}
	if !found {
		return fmt.Errorf("editRule: the gate runs no rule %q (rules in force: %v)", e.Rule, names)
	}
	rn.judgeBy()
	rn.note("editRule: rule %s edited", e.Rule)
	if e.For <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(e.For):
	}
	// Only this edit is undone: another step (a suspension, another edit) may have changed
	// the rules since, and keeps its change.
	if _, err := rn.harness.Reconfigure(ctx, func(cfg *config.Config) { undo(cfg, e, before) }); err != nil {
		return fmt.Errorf("undoing the edit of rule %s: %w", e.Rule, err)
	}
	rn.judgeBy()
	rn.note("editRule: rule %s restored", e.Rule)
	return nil
}

// judgeBy has the recorder judge by the rules the gate runs now.
func (rn *run) judgeBy() {
	cfg := rn.harness.Config()
	rn.recorder.SetConfig(&cfg)
}

// edit makes the change e describes to rule e.Rule of cfg, a scenario's scoped config.
func edit(cfg *config.Config, e *scenario.EditRule, scenarioName string) {
	e.Apply(cfg, func(sel string) string { return scenario.Scope(sel, scenarioName) })
}

// undo sets back, on the rule e edited, the fields e changed, as they were in before.
func undo(cfg *config.Config, e *scenario.EditRule, before rule.Rule) { e.Undo(cfg, before) }

func ruleNames(rules []rule.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

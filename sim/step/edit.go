package step

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
type editRule struct{ *scenario.EditRule }

// Run edits the rule and, with For, undoes the edit after it.
func (e editRule) Run(ctx context.Context, env Env) error {
	gate := env.Gate()
	// The rule is looked up inside the change, which Reconfigure makes under its lock: an
	// edit just before this one (an added or renamed rule) has then taken effect.
	var (
		before rule.Rule
		found  bool
		names  []string
	)
	if _, err := gate.Reconfigure(ctx, func(cfg *config.Config) {
		in := *cfg
		in.Rules = slices.Clone(cfg.Rules)
		in.InRules() // the default rule, as a rule of its name
		names = ruleNames(in.Rules)
		before, found = e.Apply(cfg, func(sel string) string { return scenario.Scope(sel, env.Scenario().Name) })
	}); err != nil {
		return fmt.Errorf("editing rule %s: %w", e.Rule, err)
	}
	if !found {
		return fmt.Errorf("editRule: the gate runs no rule %q (rules in force: %v)", e.Rule, names)
	}
	judgeBy(env)
	env.Note("editRule: rule %s edited", e.Rule)
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
	if _, err := gate.Reconfigure(ctx, func(cfg *config.Config) { e.Undo(cfg, before) }); err != nil {
		return fmt.Errorf("undoing the edit of rule %s: %w", e.Rule, err)
	}
	judgeBy(env)
	env.Note("editRule: rule %s restored", e.Rule)
	return nil
}

// judgeBy has the recorder judge by the rules the gate runs now.
func judgeBy(env Env) {
	cfg := env.Gate().Config()
	env.Recorder().SetConfig(&cfg)
}

func ruleNames(rules []rule.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

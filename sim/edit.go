package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/scenario"
)

// editRule restarts the gate with one rule changed, as an edit of its ConfigMap rolls its
// Pods, and from then on judges the run by the rules in force; with For, it restores the
// rules after it.
func (rn *run) editRule(ctx context.Context, e *scenario.EditRule) error {
	before := rn.harness.Config().Rules
	if !slices.ContainsFunc(before, func(r rule.Rule) bool { return r.Name == e.Rule }) {
		return fmt.Errorf("editRule: the gate runs no rule %q (rules in force: %v)", e.Rule, ruleNames(before))
	}
	if _, err := rn.harness.Reconfigure(ctx, func(cfg *config.Config) { edit(cfg, e, rn.sc.Name) }); err != nil {
		return fmt.Errorf("editing rule %s: %w", e.Rule, err)
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
	if _, err := rn.harness.Reconfigure(ctx, func(cfg *config.Config) { cfg.Rules = slices.Clone(before) }); err != nil {
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
	i := slices.IndexFunc(cfg.Rules, func(r rule.Rule) bool { return r.Name == e.Rule })
	if i < 0 {
		return
	}
	if e.Remove {
		cfg.Rules = slices.Delete(cfg.Rules, i, i+1)
		return
	}
	r := &cfg.Rules[i]
	if e.OnReboot != "" {
		r.OnReboot = rule.RebootPolicy(e.OnReboot)
	}
	if e.Suspend != nil {
		r.Suspend = *e.Suspend
	}
	if e.DryRun != nil {
		r.DryRun = *e.DryRun
	}
	if e.Rename != "" {
		// The completion annotation follows the name, as the config's default makes it.
		r.Name, r.CompletedAnnotation = e.Rename, ""
	}
	if e.TaintKey != "" {
		r.Taint.Key = e.TaintKey
	}
	if e.NodeSelector != nil {
		r.NodeSelector = ScopeConfig(config.Config{Rules: []rule.Rule{{NodeSelector: *e.NodeSelector}}}, scenarioName).Rules[0].NodeSelector
	}
	if e.MaxHold != nil {
		r.MaxHold = metav1.Duration{Duration: *e.MaxHold}
	}
}

func ruleNames(rules []rule.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

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
	rules := rn.harness.Config().Rules
	i := slices.IndexFunc(rules, func(r rule.Rule) bool { return r.Name == e.Rule })
	if i < 0 {
		return fmt.Errorf("editRule: the gate runs no rule %q (rules in force: %v)", e.Rule, ruleNames(rules))
	}
	before := rules[i]
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
	if e.TimeoutPolicy != "" {
		r.TimeoutPolicy = rule.TimeoutPolicy(e.TimeoutPolicy)
		if r.TimeoutPolicy != rule.TimeoutReplace {
			r.MaxReplacing, r.ReplaceStopAfter, r.ReplaceBackoff = 0, 0, metav1.Duration{}
		}
	}
}

// undo sets back, on the rule e edited (under its new name, if e renamed it), the fields e
// changed, as they were in before.
func undo(cfg *config.Config, e *scenario.EditRule, before rule.Rule) {
	name := e.Rule
	if e.Rename != "" {
		name = e.Rename
	}
	i := slices.IndexFunc(cfg.Rules, func(r rule.Rule) bool { return r.Name == name })
	if i < 0 {
		return
	}
	r := &cfg.Rules[i]
	if e.OnReboot != "" {
		r.OnReboot = before.OnReboot
	}
	if e.Suspend != nil {
		r.Suspend = before.Suspend
	}
	if e.DryRun != nil {
		r.DryRun = before.DryRun
	}
	if e.Rename != "" {
		r.Name, r.CompletedAnnotation = before.Name, before.CompletedAnnotation
	}
	if e.TaintKey != "" {
		r.Taint.Key = before.Taint.Key
	}
	if e.NodeSelector != nil {
		r.NodeSelector = before.NodeSelector
	}
	if e.MaxHold != nil {
		r.MaxHold = before.MaxHold
	}
	if e.TimeoutPolicy != "" {
		r.TimeoutPolicy, r.MaxReplacing, r.ReplaceStopAfter, r.ReplaceBackoff = before.TimeoutPolicy, before.MaxReplacing, before.ReplaceStopAfter, before.ReplaceBackoff
	}
}

func ruleNames(rules []rule.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

package scenario

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// Apply makes the change e describes to rule e.Rule of cfg. scope makes a node selector the
// scenario's (its own nodes only). The top-level default rule is named "default": it is
// first written out as a rule (config.Config.InRules), the same rule with the same record.
// It returns the rule as it was, for Undo, and whether cfg has the rule.
func (e *EditRule) Apply(cfg *config.Config, scope func(selector string) string) (rule.Rule, bool) {
	if e.Rule == config.DefaultRuleName {
		cfg.InRules()
	}
	i := slices.IndexFunc(cfg.Rules, func(r rule.Rule) bool { return r.Name == e.Rule })
	if i < 0 {
		return rule.Rule{}, false
	}
	before := cfg.Rules[i]
	if e.Remove {
		cfg.Rules = slices.Delete(cfg.Rules, i, i+1)
		return before, true
	}
	if e.Add != "" {
		added := cfg.Rules[i]
		added.Name, added.Taint.Key, added.CompletedAnnotation = e.Add, added.Taint.Key+"-added", ""
		cfg.Rules = append(cfg.Rules, added)
		return before, true
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
		r.Name = e.Rename
	}
	if e.TaintKey != "" {
		r.Taint.Key = e.TaintKey
	}
	if e.Effect != "" {
		r.Taint.Effect = corev1.TaintEffect(e.Effect)
	}
	if e.Mode != "" {
		r.Mode = rule.Mode(e.Mode)
		if r.Mode != rule.Startup {
			r.OnReboot = rule.RebootIgnore
		}
	}
	if e.Components != nil {
		r.Components = slices.Clone(e.Components)
	}
	if e.NodeSelector != nil {
		r.NodeSelector = scope(*e.NodeSelector)
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
	return before, true
}

// Undo sets back, on the rule e edited (under its new name, if e renamed it), the fields e
// changed, as they were in before; an added rule goes again.
func (e *EditRule) Undo(cfg *config.Config, before rule.Rule) {
	if e.Add != "" {
		cfg.Rules = slices.DeleteFunc(cfg.Rules, func(r rule.Rule) bool { return r.Name == e.Add })
		return
	}
	name := e.Rule
	if e.Rename != "" {
		name = e.Rename
	}
	i := slices.IndexFunc(cfg.Rules, func(r rule.Rule) bool { return r.Name == name })
	if i < 0 {
		return
	}
	r := &cfg.Rules[i]
	if e.OnReboot != "" || e.Mode != "" {
		r.OnReboot = before.OnReboot
	}
	if e.Suspend != nil {
		r.Suspend = before.Suspend
	}
	if e.DryRun != nil {
		r.DryRun = before.DryRun
	}
	if e.Rename != "" {
		r.Name = before.Name
	}
	if e.TaintKey != "" {
		r.Taint.Key = before.Taint.Key
	}
	if e.Effect != "" {
		r.Taint.Effect = before.Taint.Effect
	}
	if e.Mode != "" {
		r.Mode = before.Mode
	}
	if e.Components != nil {
		r.Components = before.Components
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

// EditTaints are the taints the timeline's edits give rules (a new key, a new effect, an
// added rule's), beside the rules' own, followed through the edits in time order (a rule
// renamed, then given a new key): the init DaemonSets tolerate them, as operations.md has
// the toleration rolled out with the taint, and a node that carries one is held.
func (sc *Scenario) EditTaints(rules []*rule.Rule) []corev1.Taint {
	taints := map[string]corev1.Taint{}
	for _, r := range rules {
		taints[r.Name] = r.Taint
	}
	steps := slices.Clone(sc.Timeline)
	slices.SortStableFunc(steps, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	var out []corev1.Taint
	for _, s := range steps {
		e := s.EditRule
		t, ok := taints[e.ruleName()]
		if e == nil || !ok {
			continue
		}
		switch {
		case e.Rename != "":
			taints[e.Rename] = t
			continue
		case e.Add != "":
			t.Key += "-added"
			taints[e.Add] = t
		case e.TaintKey != "":
			t.Key = e.TaintKey
		case e.Effect != "":
			t.Effect = corev1.TaintEffect(e.Effect)
		default:
			continue
		}
		if e.Rename == "" && e.Add == "" {
			taints[e.Rule] = t
		}
		out = append(out, t)
	}
	return out
}

// ruleName is the rule the edit names, "" for none.
func (e *EditRule) ruleName() string {
	if e == nil {
		return ""
	}
	return e.Rule
}

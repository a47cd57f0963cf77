package scenario

import (
	"testing"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// TestScopeConfig: every rule's selector, or the default rule's when there are no rules,
// ends with the scenario's label, the scenario names the gate's instance, and the config
// scoped is left as it was.
func TestScopeConfig(t *testing.T) {
	in := config.Config{Rules: []rule.Rule{{Name: "a"}, {Name: "b", NodeSelector: "pool=gpu"}}}
	got := ScopeConfig(in, "s")
	if got.Instance != "s" {
		t.Errorf("instance %q, want s", got.Instance)
	}
	for i, want := range []string{Label + "=s", "pool=gpu," + Label + "=s"} {
		if sel := got.Rules[i].NodeSelector; sel != want {
			t.Errorf("rule %s: selector %q, want %q", got.Rules[i].Name, sel, want)
		}
	}
	if in.Rules[1].NodeSelector != "pool=gpu" {
		t.Errorf("the config scoped changed: %q", in.Rules[1].NodeSelector)
	}
	if got := ScopeConfig(config.Config{NodeSelector: "pool=gpu"}, "s"); got.NodeSelector != "pool=gpu,"+Label+"=s" {
		t.Errorf("default rule's selector %q", got.NodeSelector)
	}
}

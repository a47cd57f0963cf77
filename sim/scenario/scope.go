package scenario

import (
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// ScopeConfig narrows every rule of cfg to the nodes of one scenario (those labelled
// Label=name), so that scenarios sharing a plane never gate each other's nodes.
func ScopeConfig(cfg config.Config, name string) config.Config {
	// The scenarios' gates share a plane: each marks the taints it places as its own, and
	// lifts no other's.
	cfg.Instance = name
	cfg.Rules = append([]rule.Rule(nil), cfg.Rules...)
	for i := range cfg.Rules {
		cfg.Rules[i].NodeSelector = Scope(cfg.Rules[i].NodeSelector, name)
	}
	if len(cfg.Rules) == 0 {
		cfg.NodeSelector = Scope(cfg.NodeSelector, name)
	}
	return cfg
}

// Scope narrows a node selector to the nodes of scenario name, as ScopeConfig does each
// rule's.
func Scope(selector, name string) string {
	if selector == "" {
		return Label + "=" + name
	}
	return selector + "," + Label + "=" + name
}

package sim

import (
	"slices"
	"testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestSequenced: node condition steps wait for the condition step before them, in timeline
// order, same offset included; every other step waits for nothing.
func TestSequenced(t *testing.T) {
	cond := scenario.Step{NodeCondition: &scenario.NodeCondition{}}
	join := scenario.Step{Join: &scenario.Join{}}
	outage := scenario.Step{WebhookOutage: &scenario.WebhookOutage{}}
	for name, tc := range map[string]struct {
		steps []scenario.Step
		want  []int
	}{
		"none":                       {nil, []int{}},
		"no condition steps":         {[]scenario.Step{join, outage, join}, []int{-1, -1, -1}},
		"one condition step":         {[]scenario.Step{join, cond}, []int{-1, -1}},
		"conditions chain in order":  {[]scenario.Step{join, cond, cond, outage, cond, cond}, []int{-1, -1, 1, -1, 2, 4}},
		"others between do not wait": {[]scenario.Step{cond, join, cond, outage}, []int{-1, -1, 0, -1}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := sequenced(tc.steps); !slices.Equal(got, tc.want) {
				t.Errorf("sequenced = %v, want %v", got, tc.want)
			}
		})
	}
}

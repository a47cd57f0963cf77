package step

import (
	"slices"
	"testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestSequenced: node condition steps wait for the condition step before them, and
// afterBound steps for the afterBound step before them, in timeline order, same offset
// included; every other step waits for nothing.
func TestSequenced(t *testing.T) {
	cond := scenario.Step{NodeCondition: &scenario.NodeCondition{}}
	join := scenario.Step{Join: &scenario.Join{}}
	outage := scenario.Step{WebhookOutage: &scenario.WebhookOutage{}}
	reboot := scenario.Step{AfterBound: true, Reboot: &scenario.Reboot{}}
	scale := scenario.Step{AfterBound: true, Scale: &scenario.Scale{}}
	boundCond := scenario.Step{AfterBound: true, NodeCondition: &scenario.NodeCondition{}}
	releasedReboot := scenario.Step{AfterReleased: true, Reboot: &scenario.Reboot{}}
	for name, tc := range map[string]struct {
		steps []scenario.Step
		want  [][]int
	}{
		"none":                          {nil, [][]int{}},
		"no condition steps":            {[]scenario.Step{join, outage, join}, [][]int{nil, nil, nil}},
		"one condition step":            {[]scenario.Step{join, cond}, [][]int{nil, nil}},
		"conditions chain in order":     {[]scenario.Step{join, cond, cond, outage, cond, cond}, [][]int{nil, nil, {1}, nil, {2}, {4}}},
		"others between do not wait":    {[]scenario.Step{cond, join, cond, outage}, [][]int{nil, nil, {0}, nil}},
		"afterBound steps chain":        {[]scenario.Step{join, reboot, join, scale, scale}, [][]int{nil, nil, nil, {1}, {3}}},
		"both chains":                   {[]scenario.Step{cond, reboot, boundCond, scale}, [][]int{nil, nil, {0, 1}, {2}}},
		"one step heads both chains":    {[]scenario.Step{boundCond, boundCond}, [][]int{nil, {0}}},
		"afterReleased joins the chain": {[]scenario.Step{join, releasedReboot, scale, releasedReboot}, [][]int{nil, nil, {1}, {2}}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Sequenced(tc.steps); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("Sequenced = %v, want %v", got, tc.want)
			}
		})
	}
}

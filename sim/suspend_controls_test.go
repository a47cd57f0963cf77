package sim

import (
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The suspend scenario's negative control, run by TestNegativeControls with the others:
// the gate restarts without the suspension, so it goes on releasing nodes in the stretch
// in which the rule should be frozen.
func init() {
	negativeControls = append(negativeControls, negativeControl{file: "suspend-during-burst", mutate: func(sc *scenario.Scenario) {
		for i := range sc.Timeline {
			if s := sc.Timeline[i].SuspendRule; s != nil {
				s.Unchanged = true
			}
		}
	}, want: check.KindWroteWhileSuspended})
}

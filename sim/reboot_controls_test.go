package sim

import (
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The reboot scenario's negative control, run by TestNegativeControls with the others:
// with onReboot: ignore nothing gates the rebooted nodes, and the Pods that arrive while
// their init Pods run again land there.
func init() {
	negativeControls = append(negativeControls, negativeControl{file: "node-reboot-regate", mutate: func(sc *scenario.Scenario) {
		sc.GateConfig.Rules[0].OnReboot = rule.RebootIgnore
		sc.Expect.Events = nil // no re-gate, so no StartupGateRegated: the violation must be what fails the run
	}, want: check.KindBoundBeforeReinit})
}

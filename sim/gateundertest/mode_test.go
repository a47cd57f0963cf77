package gateundertest

import (
	"strings"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestCheckMode: an installed gate refuses exactly the scenarios that would act on the gate
// under test, and every other mode refuses none.
func TestCheckMode(t *testing.T) {
	step := func(s scenario.Step) *scenario.Scenario {
		return &scenario.Scenario{Name: "s", Timeline: []scenario.Step{{Join: &scenario.Join{Count: 1}}, s}}
	}
	for name, tc := range map[string]struct {
		sc   *scenario.Scenario
		want string // "" accepts
	}{
		"joins and scales":    {step(scenario.Step{Scale: &scenario.Scale{}}), ""},
		"a reboot":            {step(scenario.Step{Reboot: &scenario.Reboot{}}), ""},
		"a gate crash":        {step(scenario.Step{GateCrash: &scenario.GateCrash{}}), "step 2 acts on the gate"},
		"a webhook outage":    {step(scenario.Step{WebhookOutage: &scenario.WebhookOutage{}}), "step 2 acts on the gate"},
		"a leader failover":   {step(scenario.Step{LeaderFailover: &scenario.LeaderFailover{}}), "step 2 acts on the gate"},
		"watch drops":         {step(scenario.Step{WatchDrops: &scenario.WatchDrops{}}), "step 2 acts on the gate"},
		"a suspend":           {step(scenario.Step{SuspendRule: &scenario.SuspendRule{}}), "step 2 acts on the gate"},
		"a process gate":      {&scenario.Scenario{Name: "s", GateProcess: &scenario.GateProcess{}}, "as a process"},
		"a late gate":         {&scenario.Scenario{Name: "s", GateStartsAt: time.Second}, "late"},
		"admission by policy": {&scenario.Scenario{Name: "s", Admission: "policy"}, "sets admission"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, m := range []Mode{InProcess, Policy, Off, Floor} {
				if err := CheckMode(m, tc.sc); err != nil {
					t.Errorf("--gate %s refused it: %v", m, err)
				}
			}
			err := CheckMode(Installed, tc.sc)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("--gate installed refused it: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("--gate installed: got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

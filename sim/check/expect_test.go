package check

import (
	"errors"
	"reflect"
	"testing"

	"github.com/startupgate/startupgate/sim/scenario"
)

func TestEventFailures(t *testing.T) {
	pair := []scenario.EventMatch{{Reason: "StartupGateWouldHold", Like: "StartupGateHeld"}}
	for _, tc := range []struct {
		name string
		exp  scenario.Expect
		obs  Observed
		want []string
	}{
		{name: "nothing expected, a failed count does not matter",
			obs: Observed{EventsErr: errors.New("timeout")}},
		{name: "expected and found",
			exp: scenario.Expect{Events: []string{"StartupGateReleased"}},
			obs: Observed{Events: map[string]int{"StartupGateReleased": 2}}},
		{name: "expected and not found",
			exp:  scenario.Expect{Events: []string{"StartupGateReleased"}},
			obs:  Observed{Events: map[string]int{}},
			want: []string{"expected a StartupGateReleased event, found none"}},
		{name: "pair equal",
			exp: scenario.Expect{EventsMatch: pair},
			obs: Observed{Events: map[string]int{"StartupGateWouldHold": 10, "StartupGateHeld": 10}}},
		{name: "pair unequal",
			exp:  scenario.Expect{EventsMatch: pair},
			obs:  Observed{Events: map[string]int{"StartupGateWouldHold": 9, "StartupGateHeld": 10}},
			want: []string{"expected as many StartupGateWouldHold events as StartupGateHeld events, at least one; found 9 and 10"}},
		{name: "pair equal at zero",
			exp:  scenario.Expect{EventsMatch: pair},
			obs:  Observed{Events: map[string]int{}},
			want: []string{"expected as many StartupGateWouldHold events as StartupGateHeld events, at least one; found 0 and 0"}},
		{name: "a failed count is the simulator's error, not a count of 0",
			exp:  scenario.Expect{Events: []string{"StartupGateReleased"}, EventsMatch: pair},
			obs:  Observed{Events: map[string]int{}, EventsErr: errors.New("listing StartupGateHeld events in default: context deadline exceeded")},
			want: []string{"simulator error: could not count the expected Events: listing StartupGateHeld events in default: context deadline exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventFailures(tc.exp, tc.obs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("eventFailures = %q, want %q", got, tc.want)
			}
		})
	}
}

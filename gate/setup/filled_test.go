package setup

import (
	"fmt"
	"slices"
	"testing"
)

// TestFilled: a cold standby fills only its init Pods before it leads; a warm one, or a
// replica without leader election, fills the Nodes and DaemonSets as well.
func TestFilled(t *testing.T) {
	for _, tc := range []struct {
		cold, election bool
		want           []string
	}{
		{cold: false, election: true, want: []string{"*v1.Pod", "*v1.Node", "*v1.DaemonSet"}},
		{cold: true, election: true, want: []string{"*v1.Pod"}},
		{cold: true, election: false, want: []string{"*v1.Pod", "*v1.Node", "*v1.DaemonSet"}},
		{cold: false, election: false, want: []string{"*v1.Pod", "*v1.Node", "*v1.DaemonSet"}},
	} {
		var got []string
		for _, o := range (Options{ColdStandby: tc.cold}).Filled(tc.election) {
			got = append(got, fmt.Sprintf("%T", o))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("cold standby %v, leader election %v: %v, want %v", tc.cold, tc.election, got, tc.want)
		}
	}
}

package check

import "testing"

// TestConfirmedEarly: a live count calls a binding early only once the Node stream has
// delivered everything up to it; other kinds of violation are not early Pods.
func TestConfirmedEarly(t *testing.T) {
	vs := []Violation{
		{Kind: KindEarlyPod, RV: 90},  // the node stream is past it: early
		{Kind: KindEarlyPod, RV: 100}, // at the node stream's RV: early
		{Kind: KindEarlyPod, RV: 101}, // ahead of the node stream: its release may be in flight
		{Kind: "lost-taint", RV: 50},
	}
	for _, tc := range []struct {
		nodeRV uint64
		want   int
	}{{0, 0}, {89, 0}, {90, 1}, {100, 2}, {101, 3}} {
		if got := ConfirmedEarly(vs, tc.nodeRV); got != tc.want {
			t.Errorf("ConfirmedEarly(node stream at %d) = %d, want %d", tc.nodeRV, got, tc.want)
		}
	}
}

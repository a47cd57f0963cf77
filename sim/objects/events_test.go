package objects

import (
	"errors"
	"maps"
	"testing"
	"time"
)

// TestAwaitEvents: the expected Events are counted again until each reason has been seen
// once, so that one written late (client-go tries a failed write again after 10 s) is not
// judged missing; a reason never seen is counted until the deadline, and an error ends the
// wait at once.
func TestAwaitEvents(t *testing.T) {
	boom := errors.New("listing failed")
	tests := []struct {
		name string
		// arrive is the call (1-based, per reason) from which each reason counts 1.
		arrive   map[string]int
		deadline time.Duration
		failAt   int // the call that fails (0: none)
		want     map[string]int
		wantErr  error
		calls    int
	}{
		{name: "already there", arrive: map[string]int{"A": 1, "B": 1}, deadline: time.Second,
			want: map[string]int{"A": 1, "B": 1}, calls: 2},
		{name: "one arrives late", arrive: map[string]int{"A": 1, "B": 3}, deadline: time.Second,
			want: map[string]int{"A": 1, "B": 1}, calls: 6},
		{name: "never arrives: counted until the deadline", arrive: map[string]int{"A": 1, "B": 1000}, deadline: 50 * time.Millisecond,
			want: map[string]int{"A": 1, "B": 0}},
		{name: "deadline already passed: counted once", arrive: map[string]int{"A": 5}, deadline: -time.Second,
			want: map[string]int{"A": 0}, calls: 1},
		{name: "an error ends the wait", arrive: map[string]int{"A": 5}, deadline: time.Second, failAt: 2,
			want: map[string]int{}, wantErr: boom, calls: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls, seen := 0, map[string]int{}
			count := func(reason string) (int, error) {
				calls++
				seen[reason]++
				if calls == tc.failAt {
					return 0, boom
				}
				if seen[reason] >= tc.arrive[reason] {
					return 1, nil
				}
				return 0, nil
			}
			var reasons []string
			for r := range maps.Keys(tc.arrive) {
				reasons = append(reasons, r)
			}
			got, err := AwaitEvents(reasons, time.Now().Add(tc.deadline), time.Millisecond, count)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && !maps.Equal(got, tc.want) {
				t.Errorf("counts %v, want %v", got, tc.want)
			}
			if tc.calls > 0 && calls != tc.calls {
				t.Errorf("%d counts, want %d", calls, tc.calls)
			}
		})
	}
}

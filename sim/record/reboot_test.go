package record

import (
	"testing"
	"time"
)

// TestReadyAgain: an init Pod is Ready on the new boot only once restarted after it.
func TestReadyAgain(t *testing.T) {
	at := func(rv uint64) Mark { return Mark{RV: rv, Time: time.Unix(int64(rv), 0)} }
	st := func(rv uint64, ready bool, restarts int32) InitState {
		return InitState{Mark: at(rv), Ready: ready, Restarts: restarts}
	}
	for _, tt := range []struct {
		name   string
		states []InitState
		want   uint64
	}{
		{"unready then ready", []InitState{st(1, true, 0), st(6, false, 1), st(8, true, 1)}, 8},
		{"restarted and ready, the unready write coalesced", []InitState{st(1, true, 0), st(8, true, 1)}, 8},
		{"ready since before the reboot", []InitState{st(1, true, 0)}, 0},
		{"unready since", []InitState{st(1, true, 0), st(6, false, 1)}, 0},
		{"a new Pod after the reboot", []InitState{st(7, true, 0)}, 7},
		{"down and up before the reboot", []InitState{st(1, false, 0), st(3, true, 1)}, 0},
	} {
		if got := ReadyAgain(tt.states, at(5)); got.RV != tt.want {
			t.Errorf("%s: ready again at rv %d, want %d", tt.name, got.RV, tt.want)
		}
	}
}

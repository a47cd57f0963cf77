package gateundertest

import (
	"context"
	"testing"

	"github.com/startupgate/startupgate/gate/config"
)

// TestReconfigureIsAnOutage: an edit of the rules stops every replica before any starts
// again, so the gate is down for a while, as at a crash point: the window is recorded for
// the explorer to judge the run by (DownWindows), and the new config is in force.
func TestReconfigureIsAnOutage(t *testing.T) {
	h := &Harness{cfg: config.DefaultConfig()}
	if _, err := h.Reconfigure(context.Background(), func(c *config.Config) { c.MaxHold.Duration = 42 }); err != nil {
		t.Fatal(err)
	}
	w := h.DownWindows()
	if len(w) != 1 || w[0].To.Before(w[0].From) {
		t.Fatalf("down windows after a reconfiguration: %v, want one", w)
	}
	if got := h.Config().MaxHold.Duration; got != 42 {
		t.Errorf("maxHold after the edit: %v", got)
	}
}

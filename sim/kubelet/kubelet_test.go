package kubelet

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

func TestKubeletDelayIsSeeded(t *testing.T) {
	tl := scenario.PodTimeline{After: 2 * time.Second, Jitter: time.Second}
	a := &Kubelet{Seed: 7}
	b := &Kubelet{Seed: 7}
	c := &Kubelet{Seed: 8}
	same, differ := true, false
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4"} {
		da, db, dc := a.delay(n, "init", tl), b.delay(n, "init", tl), c.delay(n, "init", tl)
		same = same && da == db
		differ = differ || da != dc
		if da < time.Second || da > 3*time.Second {
			t.Errorf("delay %s outside 2s ± 1s", da)
		}
	}
	if !same || !differ {
		t.Errorf("same seed same schedule: %v; other seed differs: %v", same, differ)
	}
}

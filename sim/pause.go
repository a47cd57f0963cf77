package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

// pauseAutoscaler arms the pause, waits for the Node that stops Karpenter, and continues
// Karpenter For later.
func (rn *run) pauseAutoscaler(ctx context.Context, pa *scenario.PauseAutoscaler) error {
	if rn.autoscale == nil || rn.autoscale.Pause == nil {
		return errors.New("pauseAutoscaler: no autoscaler running")
	}
	p := rn.autoscale.Pause
	var node string
	select {
	case <-ctx.Done():
		return nil
	case n, ok := <-p.Arm():
		if !ok {
			return errors.New("pauseAutoscaler: could not stop Karpenter")
		}
		node = n
	}
	rn.note("Karpenter stopped inside the CREATE of node %s, for %s", node, pa.For)
	select {
	case <-ctx.Done():
	case <-time.After(pa.For):
	}
	if err := p.Resume(); err != nil {
		return fmt.Errorf("continuing Karpenter: %w", err)
	}
	rn.note("Karpenter continued")
	return nil
}

package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

// pauseAutoscaler arms the autoscaler's pause, waits for the Node that stops Karpenter, and
// continues Karpenter For later.
type pauseAutoscaler struct{ *scenario.PauseAutoscaler }

// Run stops Karpenter at its next Node CREATE and continues it For later.
func (pa pauseAutoscaler) Run(ctx context.Context, env Env) error {
	a := env.Autoscaler()
	if a == nil {
		return errors.New("pauseAutoscaler: no autoscaler running")
	}
	var node string
	select {
	case <-ctx.Done():
		return nil
	case n, ok := <-a.Arm():
		if !ok {
			return errors.New("pauseAutoscaler: could not stop Karpenter")
		}
		node = n
	}
	env.Note("Karpenter stopped inside the CREATE of node %s, for %s", node, pa.For)
	select {
	case <-ctx.Done():
	case <-time.After(pa.For):
	}
	if err := a.Resume(); err != nil {
		return fmt.Errorf("continuing Karpenter: %w", err)
	}
	env.Note("Karpenter continued")
	return nil
}

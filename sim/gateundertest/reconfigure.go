package gateundertest

import (
	"context"
	"slices"

	"github.com/startupgate/startupgate/gate/config"
)

// Reconfigure restarts every replica with the configuration that change makes of the
// current one, as an edit of the gate's ConfigMap rolls its Pods: every replica stops
// before any starts again, so no replica with the old configuration runs beside one with
// the new. It returns once they are started, with the count of Node writes (NodeWrites)
// when the last one had stopped: every write of the old configuration's. The rules are
// copied first: the run's recorder reads the same Config, and judges by the scenario's
// configuration, not the gate's.
func (h *Harness) Reconfigure(ctx context.Context, change func(*config.Config)) (int64, error) {
	if h.off {
		return 0, nil
	}
	for _, r := range h.replicas {
		if err := h.kill(r); err != nil {
			return 0, err
		}
	}
	writes := h.NodeWrites()
	cfg := h.cfg
	cfg.Rules = slices.Clone(cfg.Rules)
	change(&cfg)
	if err := cfg.Validate(); err != nil {
		return writes, err
	}
	h.cfg = cfg
	for _, r := range h.replicas {
		if err := h.Run(ctx, r); err != nil {
			return writes, err
		}
	}
	return writes, nil
}

package gateundertest

import (
	"context"
	"slices"
	"time"

	"github.com/startupgate/startupgate/gate/config"
)

// Reconfigure restarts every replica with the configuration that change makes of the
// current one, as an edit of the gate's ConfigMap rolls its Pods: every replica stops
// before any starts again, so no replica with the old configuration runs beside one with
// the new. It returns once they are started, with the count of Node writes (NodeWrites)
// when the last one had stopped: every write of the old configuration's. The rules are
// copied first: the run's recorder reads the same Config, and judges by the scenario's
// configuration, not the gate's.
//
// The gate is down meanwhile, its webhooks too, as with a Deployment whose strategy is
// Recreate (the chart's rolling update keeps one replica up): the window is recorded with
// the crash points' (DownWindows).
func (h *Harness) Reconfigure(ctx context.Context, change func(*config.Config)) (int64, error) {
	if h.off {
		return 0, nil
	}
	// Two edits at once would each start from the config before both: one would be lost.
	h.reconfMu.Lock()
	defer h.reconfMu.Unlock()
	from := time.Now()
	defer func() { h.down.add(from, time.Now()) }()
	for _, r := range h.replicas {
		if err := h.kill(r); err != nil {
			return 0, err
		}
	}
	writes := h.NodeWrites()
	cfg := h.Config()
	cfg.Rules = slices.Clone(cfg.Rules)
	change(&cfg)
	if err := cfg.Validate(); err != nil {
		return writes, err
	}
	h.cfgMu.Lock()
	h.cfg = cfg
	h.cfgMu.Unlock()
	for _, r := range h.replicas {
		if err := h.Run(ctx, r); err != nil {
			return writes, err
		}
	}
	return writes, nil
}

// Config is the configuration the replicas run with now: the scenario's, as the last
// Reconfigure left it.
func (h *Harness) Config() config.Config {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	return h.cfg
}

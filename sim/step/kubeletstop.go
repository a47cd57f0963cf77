package step

import (
	"context"
	"time"

	"github.com/startupgate/startupgate/sim/scenario"
)

// kubeletStop stops the fake kubelet of the nodes, and records when.
type kubeletStop struct{ *scenario.KubeletStop }

// Run stops the kubelet of each of the step's nodes.
func (k kubeletStop) Run(ctx context.Context, env Env) error {
	nodes, err := nodesOf(ctx, env, k.NodeRef)
	if err != nil {
		return err
	}
	for _, name := range nodes {
		env.Kubelet().Deregister(name)
		env.Recorder().KubeletStopped(name, time.Now())
	}
	env.Note("kubelet stopped on %v", nodes)
	return nil
}

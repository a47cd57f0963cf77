package step

import (
	"context"

	"github.com/startupgate/startupgate/sim/scenario"
)

// reboot reboots the nodes through their fake kubelets: a new boot ID, then their init
// Pods restarted.
type reboot struct{ *scenario.Reboot }

// Run reboots the step's nodes and remembers them for a later afterRegated step.
func (rb reboot) Run(ctx context.Context, env Env) error {
	nodes, err := nodesOf(ctx, env, rb.NodeRef)
	if err != nil {
		return err
	}
	env.State().rebooting(nodes)
	n, err := env.Kubelet().Reboot(nodes)
	env.Note("reboot of %v: %d init Pods restarted", nodes, n)
	return err
}

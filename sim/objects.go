package sim

import (
	"context"
	"fmt"

	"github.com/startupgate/startupgate/sim/objects"
)

// The Kubernetes objects a scenario creates, through sim/objects.

func (rn *run) objects() objects.Run {
	return objects.Run{Client: rn.client, Namespace: rn.ns, Scenario: rn.sc}
}

// setup creates the namespace, the DaemonSets and the pending workloads.
func (rn *run) setup(ctx context.Context) error {
	for _, w := range rn.sc.Workloads {
		rn.state.Want(w.Name, w.Replicas)
	}
	return rn.objects().Create(ctx, &rn.cfg)
}

// cleanup removes everything the scenario created and waits until its nodes are gone.
func (rn *run) cleanup(ctx context.Context) error {
	if err := rn.clearAutoscaler(ctx); err != nil {
		return fmt.Errorf("clearing the autoscaler's objects: %w", err)
	}
	return rn.objects().Delete(ctx)
}

package step

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/scenario"
)

// scale sets a workload's replicas (workloads that arrive after the nodes).
type scale struct{ *scenario.Scale }

// Run patches the Deployment and records the replicas asked for.
func (s scale) Run(ctx context.Context, env Env) error {
	_, err := env.Client().AppsV1().Deployments(env.Namespace()).Patch(ctx, s.Workload, "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, s.Replicas)), metav1.PatchOptions{})
	if err == nil {
		env.State().Want(s.Workload, s.Replicas)
	}
	return err
}

package step

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/scenario"
)

// nodeCondition sets or clears a node condition, as a termination handler or
// node-problem-detector would: a status write that keeps every other condition.
type nodeCondition struct{ *scenario.NodeCondition }

// Run writes the condition on each of the step's nodes.
func (c nodeCondition) Run(ctx context.Context, env Env) error {
	nodes, err := nodesOf(ctx, env, c.NodeRef)
	if err != nil {
		return err
	}
	for _, name := range nodes {
		err := kubelet.Retry(ctx, func() error {
			n, err := env.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Conditions = scenario.SetNodeCondition(n.Status.Conditions, c.NodeCondition, metav1.Now())
			_, err = env.Client().CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("setting condition %s on node %s: %w", c.Type, name, err)
		}
	}
	env.Note("condition %s=%s on %v", c.Type, map[bool]string{true: "(cleared)", false: c.Status}[c.Clear], nodes)
	return nil
}

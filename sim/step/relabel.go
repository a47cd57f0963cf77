package step

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/startupgate/startupgate/sim/scenario"
)

// relabel sets (or, for a null value, removes) labels on a node, as an operator or a node
// pool controller would.
type relabel struct{ *scenario.Relabel }

// Run patches the node's labels.
func (rl relabel) Run(ctx context.Context, env Env) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": rl.Labels}})
	if err != nil {
		return err
	}
	if _, err := env.Client().CoreV1().Nodes().Patch(ctx, rl.Node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("relabelling node %s: %w", rl.Node, err)
	}
	env.Note("relabel: node %s labels %s", rl.Node, patch)
	return nil
}

package step

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/scenario"
)

// nodeDelete removes a node as a scale-down would, with the Pods bound to it.
type nodeDelete struct{ *scenario.NodeDelete }

// Run stops the node's kubelet, deletes the node and deletes its Pods.
func (d nodeDelete) Run(ctx context.Context, env Env) error {
	env.Kubelet().Deregister(d.Node)
	if err := env.Client().CoreV1().Nodes().Delete(ctx, d.Node, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return deletePodsOn(ctx, env, d.Node)
}

package step

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/scenario"
)

// reregister deletes a node and registers it again under the same name, as an autoscaler
// that reuses names does. With KeepOldInitPod the old node's init Pods stay bound and Ready,
// as they do while pod GC lags; otherwise they are deleted with the node.
type reregister struct{ *scenario.Reregister }

// Run deletes the node, waits until it is gone, and registers it again.
func (rr reregister) Run(ctx context.Context, env Env) error {
	j := env.State().join(rr.Node)
	if j == nil {
		return fmt.Errorf("reregister: node %s never joined", rr.Node)
	}
	env.Kubelet().Deregister(rr.Node)
	if err := env.Client().CoreV1().Nodes().Delete(ctx, rr.Node, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	if !rr.KeepOldInitPod {
		if err := deletePodsOn(ctx, env, rr.Node); err != nil {
			return err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client().CoreV1().Nodes().Get(ctx, rr.Node, metav1.GetOptions{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("waiting for node %s to be gone: %w", rr.Node, err)
	}
	env.State().registered(-1)
	register(ctx, env, rr.Node, j)
	return nil
}

package step

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/sim/scenario"
)

// What several steps do through the API: find a step's nodes, delete the run's Pods.

// nodesOf resolves a step's nodes: by name, or the node a Pod of the run is bound to now.
func nodesOf(ctx context.Context, c Cluster, ref scenario.NodeRef) ([]string, error) {
	if ref.PodNode == "" {
		return ref.Nodes, nil
	}
	p, err := c.Client().CoreV1().Pods(c.Namespace()).Get(ctx, ref.PodNode, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("finding the node of pod %s: %w", ref.PodNode, err)
	}
	if p.Spec.NodeName == "" {
		return nil, fmt.Errorf("pod %s is not bound to a node", ref.PodNode)
	}
	return []string{p.Spec.NodeName}, nil
}

// deletePodsOn deletes every Pod of the run bound to node.
func deletePodsOn(ctx context.Context, c Cluster, node string) error {
	return deletePods(ctx, c, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
}

// deletePods deletes, at once, the run's Pods that opts selects.
func deletePods(ctx context.Context, c Cluster, opts metav1.ListOptions) error {
	pods, err := c.Client().CoreV1().Pods(c.Namespace()).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		err := c.Client().CoreV1().Pods(c.Namespace()).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

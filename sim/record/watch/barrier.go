package watch

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/sim/scenario"
)

// Barrier returns once both streams have delivered everything written up to now. It writes
// a marker of its own into each — a pending sentinel Pod in the namespace, an annotation on
// one of the scenario's nodes — and waits until the recorder has seen a resourceVersion at
// least as new. Without it the checker could judge while the busy Pod stream still lags the
// Node stream: a release would seem to precede the readiness that caused it.
func (r *Recorder) Barrier(ctx context.Context, cs kubernetes.Interface, name string) error {
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	pods := cs.CoreV1().Pods(r.namespace)
	sentinel, err := pods.Get(ctx, "sim-barrier", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sentinel, err = pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "sim-barrier", Annotations: map[string]string{"sim.startupgate.io/barrier": stamp}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"sim.startupgate.io/nowhere": "true"},
				Containers:   []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
			},
		}, metav1.CreateOptions{})
	} else if err == nil {
		sentinel.Annotations["sim.startupgate.io/barrier"] = stamp
		sentinel, err = pods.Update(ctx, sentinel, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing pod barrier: %w", err)
	}
	waits := []struct {
		seen *atomic.Uint64
		want uint64
	}{{&r.podRV, rv(sentinel)}}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: scenario.Label + "=" + name, Limit: 1})
	if err != nil {
		return err
	}
	if len(nodes.Items) > 0 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"sim.startupgate.io/barrier":%q}}}`, stamp)
		n, err := cs.CoreV1().Nodes().Patch(ctx, nodes.Items[0].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("writing node barrier: %w", err)
		}
		if err == nil {
			waits = append(waits, struct {
				seen *atomic.Uint64
				want uint64
			}{&r.nodeRV, rv(n)})
		}
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, w := range waits {
			if w.seen.Load() < w.want {
				return false, nil
			}
		}
		return true, nil
	})
}

func maxStore(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

package kubelet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// KWOKNodeLabel marks the Nodes that Karpenter's KWOK provider creates (as a label and as
// an annotation). They have no kubelet of their own: Adopt them with this selector.
const KWOKNodeLabel = "kwok.x-k8s.io/node"

// startAdopting plays the kubelet of every Node that k.Adopt selects and that this kubelet
// did not register: another component created it (an autoscaler's cloud provider), and
// nothing else will report it Ready, renew its Lease or run its Pods.
func (k *Kubelet) startAdopting(ctx context.Context) error {
	if k.Adopt == nil {
		return nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(k.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = k.Adopt.String() }))
	ni := f.Core().V1().Nodes().Informer()
	if _, err := ni.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.adoptNode(o.(*corev1.Node)) },
		UpdateFunc: func(_, o any) { k.adoptNode(o.(*corev1.Node)) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if n, ok := o.(*corev1.Node); ok {
				k.Deregister(n.Name)
			}
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ni.HasSynced) {
		return fmt.Errorf("kubelet node informer did not sync")
	}
	return nil
}

// adoptNode takes a Node over the first time it is seen: its Lease, then its Ready report
// (which keeps the capacity its creator gave it), then the Pods already bound to it.
func (k *Kubelet) adoptNode(n *corev1.Node) {
	if !k.Adopt.Matches(labels.Set(n.Labels)) {
		return
	}
	k.mu.Lock()
	_, known := k.nodes[n.Name]
	if !known {
		k.nodes[n.Name] = struct{}{}
	}
	k.mu.Unlock()
	if known {
		return
	}
	go func() {
		if err := k.renewLease(k.ctx, n); err != nil {
			k.fail(fmt.Errorf("renewing lease of adopted node %s: %w", n.Name, err))
		}
		k.fail(k.reportReady(n))
		k.fail(k.drivePodsOn(n.Name))
	}()
}

// drivePodsOn drives the Pods bound to the node before it was adopted: their informer
// events came while the node was not yet ours, and were passed over. A Pod seen twice is
// driven once.
func (k *Kubelet) drivePodsOn(node string) error {
	var pods *corev1.PodList
	err := Retry(k.ctx, func() error {
		var err error
		pods, err = k.Client.CoreV1().Pods(k.Namespace).List(k.ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		return err
	})
	if err != nil {
		return fmt.Errorf("listing pods of adopted node %s: %w", node, err)
	}
	for i := range pods.Items {
		k.pod(&pods.Items[i])
	}
	return nil
}

package gate

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Backfiller taints nodes that came up without the startup taint (a webhook outage under
// failurePolicy Ignore, or a gate installed after the node) — but only while they are idle,
// because tainting a node already running workloads gates nothing and only confuses.
//
// Pods are listed per node with a spec.nodeName field selector straight from the API: the
// gate never caches every Pod in the cluster.
type Backfiller struct {
	Writer   *NodeWriter
	Reader   client.Reader // uncached (APIReader)
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Config   *config.Config
}

// Node backfills one untainted, unreleased, gated node if it is idle. After tainting it
// looks again: a workload Pod that the scheduler bound between the first look and the
// taint landing means the node is in service, so the taint comes off again and the node is
// marked released — it will not be gated later.
func (b *Backfiller) Node(ctx context.Context, node *corev1.Node) error {
	logger := log.FromContext(ctx).WithValues("node", klog.KObj(node))
	busy, err := b.busyPod(ctx, node.Name)
	if err != nil {
		return err
	}
	if busy != "" {
		backfillsTotal.WithLabelValues("busy").Inc()
		logger.V(1).Info("Not backfilling busy node", "pod", busy)
		return nil
	}
	var rules []*rule.Rule
	tainted, wrote, err := b.Writer.Write(ctx, node, func(n *corev1.Node) { _, rules = b.Config.Admit(n) })
	if err != nil || !wrote {
		return err
	}
	backfillsTotal.WithLabelValues("tainted").Inc()
	b.Recorder.Eventf(tainted, nil, corev1.EventTypeNormal, ReasonBackfilled, eventActionBackfill, "Added startup taints of rules %s to idle node that came up without them", ruleNames(rules))
	logger.Info("Backfilled startup taint")

	busy, err = b.busyPod(ctx, node.Name)
	if err != nil || busy == "" {
		return err
	}
	now := b.Clock.Now()
	undone, _, err := b.Writer.Write(ctx, tainted, func(n *corev1.Node) {
		for _, r := range rules {
			r.Release(n, now)
		}
	})
	if err != nil {
		return fmt.Errorf("undoing backfill of node %q: %w", node.Name, err)
	}
	backfillsTotal.WithLabelValues("undone").Inc()
	b.Recorder.Eventf(undone, nil, corev1.EventTypeWarning, ReasonBackfillUndone, eventActionBackfill, "Removed backfilled startup taint: workload pod %s landed first", busy)
	logger.Info("Undid backfill, workload pod landed first", "pod", busy)
	return nil
}

// busyPod names the first Pod on the node that makes it busy, or "" when idle.
func (b *Backfiller) busyPod(ctx context.Context, nodeName string) (string, error) {
	pods, err := podsOn(ctx, b.Reader, nodeName)
	if err != nil {
		return "", err
	}
	for i := range pods {
		if p := &pods[i]; makesBusy(p, b.Config) {
			return p.Namespace + "/" + p.Name, nil
		}
	}
	return "", nil
}

// podsOn lists every Pod bound to the node, with a spec.nodeName field selector: r should be
// uncached, as the gate caches init Pods only.
func podsOn(ctx context.Context, r client.Reader, nodeName string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	sel := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(PodNodeNameField, nodeName)}
	if err := r.List(ctx, list, sel); err != nil {
		return nil, fmt.Errorf("listing pods of node %q: %w", nodeName, err)
	}
	return list.Items, nil
}

// makesBusy: a Pod counts as workload unless it is finished, a DaemonSet Pod, a mirror Pod,
// or tolerates the startup taint.
func makesBusy(p *corev1.Pod, cfg *config.Config) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := p.Annotations[mirrorPodAnnotation]; mirror {
		return false
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return false
	}
	return !cfg.Tolerates(p.Spec.Tolerations)
}

// ruleNames lists rules' names for a message.
func ruleNames(rules []*rule.Rule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

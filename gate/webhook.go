package gate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/startupgate/startupgate/gate/config"
)

// NodeWebhookPath is where the Node mutating webhook is served; deploy/base/webhook.yaml
// points at it.
const NodeWebhookPath = "/mutate-node"

// Webhook results, the label values of the webhook request metric.
const (
	resultTainted  = "tainted"
	resultPresent  = "already_tainted"
	resultExcluded = "excluded"
	resultReleased = "released"
	resultRejected = "rejected"
)

// nodeDefaulter adds the startup taint to a Node at CREATE. It is the same mutation as the
// MutatingAdmissionPolicy that gate/policy renders; a test against a real apiserver holds them equal.
type nodeDefaulter struct {
	cfg *config.Config
}

// NewNodeWebhook returns the admission webhook that taints Nodes at creation.
// controller-runtime's Defaulter builds the JSON patch from the change, so adding the taint
// is all this code does; it is idempotent, so reinvocation is harmless.
func NewNodeWebhook(scheme *runtime.Scheme, cfg *config.Config) *admission.Webhook {
	return admission.WithDefaulter[*corev1.Node](scheme, &nodeDefaulter{cfg: cfg})
}

// Default adds the taint of every rule that holds nodes from creation and applies to the
// node; controller-runtime turns the change into the admission patch.
func (d *nodeDefaulter) Default(ctx context.Context, node *corev1.Node) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewBadRequest("no admission request in context")
	}
	result, err := d.mutate(req, node)
	webhookRequests.WithLabelValues(result).Inc()
	if err != nil {
		return err
	}
	if result == resultTainted {
		log.FromContext(ctx).V(1).Info("Adding startup taints", "node", node.Name, "taints", node.Spec.Taints)
	}
	return nil
}

// mutate is the decision, apart from metrics and logs. The kind check matters: the decoder
// happily decodes any object into a Node, so a misrouted Pod would otherwise be "tainted".
func (d *nodeDefaulter) mutate(req admission.Request, node *corev1.Node) (string, error) {
	if req.Kind.Group != "" || req.Kind.Kind != "Node" {
		return resultRejected, apierrors.NewBadRequest(fmt.Sprintf("startupgate mutates only core/v1 Node, got %q", req.Kind.String()))
	}
	if req.Operation != "CREATE" {
		return resultExcluded, nil
	}
	applies, tainted := d.cfg.Admit(node)
	switch {
	case len(applies) == 0 && d.cfg.Released(node):
		return resultReleased, nil
	case len(applies) == 0:
		return resultExcluded, nil
	case len(tainted) == 0:
		return resultPresent, nil
	}
	return resultTainted, nil
}

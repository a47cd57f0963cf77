package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
)

// Every overlay applies to a real apiserver (dry run, then for real).

// applyAll server-side applies objs in order, each first with DryRun All, then for real.
// It returns the objects applied and the error of each one that failed.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, map[*unstructured.Unstructured]error) {
	var applied []*unstructured.Unstructured
	failed := map[*unstructured.Unstructured]error{}
	for _, o := range objs {
		if err := apply(ctx, c, o, client.DryRunAll); err != nil {
			failed[o] = fmt.Errorf("dry run: %w", err)
			continue
		}
		if err := apply(ctx, c, o); err != nil {
			failed[o] = err
			continue
		}
		applied = append(applied, o)
	}
	return applied, failed
}

func apply(ctx context.Context, c client.Client, o *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(fieldOwner), client.ForceOwnership)
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...)
}

func describe(o client.Object) string {
	gvk := o.GetObjectKind().GroupVersionKind()
	if o.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", gvk.Kind, o.GetNamespace(), o.GetName())
	}
	return fmt.Sprintf("%s %s", gvk.Kind, o.GetName())
}

// deleteAll deletes objs (last first) and waits until they are gone. Pods in the gate's
// namespace are force-deleted: without a kubelet a bound Pod would never finish
// terminating, and the namespace with it.
func deleteAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := len(objs) - 1; i >= 0; i-- {
		err := c.Delete(ctx, objs[i].DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			t.Errorf("deleting %s: %v", describe(objs[i]), err)
		}
	}
	err := wait(ctx, 3*time.Minute, func() error {
		_ = c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(gateNamespace), client.GracePeriodSeconds(0))
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(o), got)
			if err == nil {
				return fmt.Errorf("%s still exists", describe(o))
			}
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("waiting for deletion: %v", err)
	}
}

// wait polls f until it returns nil or the timeout passes, and returns f's last error.
func wait(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probeNode is a Node that a dry-run CREATE sends through admission.
func probeNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestOverlaysApply(t *testing.T) {
	c := adminClient(t)
	cfg := defaultConfig(t)
	for _, src := range sources {
		for _, overlay := range overlays {
			t.Run(src.name+"/"+overlay, func(t *testing.T) { checkApply(t, c, &cfg, src.render(t, overlay), overlay) })
		}
	}
}

// checkApply applies an overlay's objects, as rendered by one source, to the plane.
func checkApply(t *testing.T, c client.Client, cfg *config.Config, objs []*unstructured.Unstructured, overlay string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(func() { deleteAll(t, c, objs) })

	// Apply in kustomize's order, but take each webhook configuration out again as
	// soon as it has been checked: it points at a Service with no endpoints and, for
	// Nodes, fails closed — left in place it would block every later Node CREATE.
	var applied []*unstructured.Unstructured
	failed := map[*unstructured.Unstructured]error{}
	for _, o := range objs {
		a, f := applyAll(ctx, c, []*unstructured.Unstructured{o})
		applied = append(applied, a...)
		for k, v := range f {
			failed[k] = v
		}
		if len(a) == 0 {
			continue
		}
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			checkWebhookFailsClosed(ctx, t, c, cfg)
			deleteNow(ctx, t, c, o)
		case "ValidatingWebhookConfiguration":
			deleteNow(ctx, t, c, o)
		}
	}

	for o, err := range failed {
		if overlay == "cert-manager" && o.GroupVersionKind().Group == certManagerGroup && meta.IsNoMatchError(err) {
			continue // no cert-manager CRDs on this plane
		}
		t.Errorf("applying %s: %v", describe(o), err)
	}
	if overlay == "cert-manager" {
		var cm []string
		for o := range failed {
			cm = append(cm, o.GetKind())
		}
		slices.Sort(cm)
		if !slices.Equal(slices.Compact(cm), []string{"Certificate", "Issuer"}) {
			t.Errorf("cert-manager overlay: failed kinds %v, want exactly the cert-manager.io Certificate and Issuer", cm)
		}
	}
	// Everything applied (webhook configurations aside, deleted above) is stored.
	for _, o := range applied {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Errorf("reading back %s: %v", describe(o), err)
		}
	}
	if overlay == "policy" {
		checkPolicyTaints(ctx, t, c, cfg)
	}
}

func deleteNow(ctx context.Context, t *testing.T, c client.Client, o *unstructured.Unstructured) {
	t.Helper()
	if err := c.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", describe(o), err)
	}
}

// checkWebhookFailsClosed proves on the real apiserver what the webhook comment claims:
// with no gate Pod to answer, a gated Node cannot register (failurePolicy Fail), while
// the system and control-plane nodes the gate itself runs on still can (objectSelector).
func checkWebhookFailsClosed(ctx context.Context, t *testing.T, c client.Client, cfg *config.Config) {
	t.Helper()
	dry := client.DryRunAll
	err := wait(ctx, 15*time.Second, func() error {
		err := c.Create(ctx, probeNode("probe-gated", nil), dry)
		if err == nil {
			return errors.New("a gated Node registered although the webhook cannot be reached")
		}
		if !strings.Contains(err.Error(), "node-startup-taint.startup.k8s.io") {
			return fmt.Errorf("unexpected error: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("failurePolicy Fail: %v", err)
	}
	for _, labels := range []map[string]string{
		{"kubernetes.azure.com/mode": "system"},
		{"node-role.kubernetes.io/control-plane": ""},
	} {
		n := probeNode("probe-skipped", labels)
		if cfg.Gated(n) {
			t.Fatalf("probe %v is gated by the default config", labels)
		}
		if err := c.Create(ctx, n, dry); err != nil {
			t.Errorf("node with %v must register while the webhook is down (objectSelector): %v", labels, err)
		}
	}
}

// checkPolicyTaints proves that the shipped policy really adds the taint inside the
// apiserver, and skips system nodes.
func checkPolicyTaints(ctx context.Context, t *testing.T, c client.Client, cfg *config.Config) {
	t.Helper()
	err := wait(ctx, 20*time.Second, func() error {
		n := probeNode("probe-policy", nil)
		if err := c.Create(ctx, n, client.DryRunAll); err != nil {
			return err
		}
		if !cfg.HasTaint(n) {
			return fmt.Errorf("node admitted without the startup taint: %v", n.Spec.Taints)
		}
		return nil
	})
	if err != nil {
		t.Errorf("MutatingAdmissionPolicy from the policy overlay: %v", err)
	}
	sys := probeNode("probe-policy-system", map[string]string{"kubernetes.azure.com/mode": "system"})
	if err := c.Create(ctx, sys, client.DryRunAll); err != nil || cfg.HasTaint(sys) {
		t.Errorf("system node: err %v, taints %v; want admitted untainted", err, sys.Spec.Taints)
	}
}

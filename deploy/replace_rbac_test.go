package deploy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/autoscaler"
)

var (
	nodeClaimsDelete = perm{"karpenter.sh", "nodeclaims", "delete"}
	nodePoolsGet     = perm{"karpenter.sh", "nodepools", "get"}
	nodePoolsPatch   = perm{"karpenter.sh", "nodepools", "patch"}
)

// TestReplaceRBACIsMinimal: the grants of timeoutPolicy replace (overlays/replace's
// ClusterRole; the chart renders the same rules, which TestReplaceGrants in deploy/helm
// checks) are what the gate's replacement of a node needs and nothing more, on the plane
// with Karpenter's CRDs installed. The base roles are applied beside them, as installed.
func TestReplaceRBACIsMinimal(t *testing.T) {
	c := adminClient(t)
	dir, err := autoscaler.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := autoscaler.InstallCRDs(adminConfig(t), dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(adminConfig(t), autoscaler.CRDOptions(dir)); err != nil {
			t.Errorf("cleanup: uninstalling Karpenter's CRDs: %v", err)
		}
	})
	base := applyRBAC(t, c, sources[0])
	var grants []*unstructured.Unstructured
	for _, o := range render(t, filepath.Join("overlays", "replace")) {
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") && o.GetName() == "startupgate-replace" {
			grants = append(grants, o)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	t.Cleanup(func() { deleteAll(t, c, grants) })
	if _, failed := applyAll(ctx, c, grants); len(failed) > 0 {
		t.Fatalf("applying the replace grants: %v", failed)
	}
	role := mustGet[rbacv1.ClusterRole](t, grants, "ClusterRole", "startupgate-replace")
	gateRole := mustGet[rbacv1.ClusterRole](t, base, "ClusterRole", "startupgate")
	f := newReplaceFixture(t, newFixture(t, c))
	checkMinimal(t, c, f.ops(), []roleUnderTest{{role, &role.Rules}}, gateRole.Rules)
}

// replaceFixture is a NodePool and a rule that replaces its nodes a minute after they
// were tainted; each operation makes a node of the pool and its NodeClaim afresh.
type replaceFixture struct {
	*fixture
	pool string
	cfg  config.Config
}

// replaceLabel marks the fixture's nodes, to clear them between operations.
const replaceLabel = "rbac-test.startup.k8s.io/replace"

func newReplaceFixture(t *testing.T, f *fixture) *replaceFixture {
	t.Helper()
	rf := &replaceFixture{fixture: f, pool: "rbac-test-pool", cfg: config.DefaultConfig()}
	rf.cfg.Rules = []rule.Rule{{Name: config.DefaultRuleName, Taint: f.cfg.Taint, Components: rf.cfg.Components,
		MaxHold: metav1.Duration{Duration: time.Minute}, TimeoutPolicy: rule.TimeoutReplace}}
	rf.cfg.Components = config.DefaultConfig().Components
	if err := rf.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	pool := karpenterObject("NodePool", rf.pool)
	if err := unstructured.SetNestedMap(pool.Object, map[string]any{"template": map[string]any{"spec": map[string]any{
		"nodeClassRef": nodeClassRef(), "requirements": []any{}}}}, "spec"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.admin.Create(ctx, pool); err != nil {
		t.Fatalf("creating NodePool %s: %v", rf.pool, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rf.clear(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := f.admin.Delete(ctx, karpenterObject("NodePool", rf.pool)); err != nil {
			t.Errorf("cleanup: deleting NodePool %s: %v", rf.pool, err)
		}
	})
	return rf
}

func karpenterObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(rule.KarpenterAPIVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func nodeClassRef() map[string]any {
	return map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
}

func (rf *replaceFixture) ops() []gateOp {
	return []gateOp{{
		name: "gate.Reconciler replaces a timed-out Karpenter node: reads its NodePool, records the storm guard on it, marks the node, " +
			"deletes its NodeClaim by UID",
		needs: []perm{nodesGet, nodesList, nodesPatch, podsList, nodePoolsGet, nodePoolsPatch, nodeClaimsDelete},
		run:   rf.replace,
	}}
}

// clear deletes the fixture's nodes and NodeClaims and the pool's guard, so that neither the
// budget (one replacement in flight) nor the backoff holds the next operation back.
func (rf *replaceFixture) clear(ctx context.Context) error {
	if err := rf.admin.DeleteAllOf(ctx, &corev1.Node{}, client.HasLabels{replaceLabel}); err != nil {
		return fmt.Errorf("deleting the fixture's nodes: %w", err)
	}
	claims := karpenterObject(rule.KarpenterNodeClaimKind, "")
	if err := rf.admin.DeleteAllOf(ctx, claims, client.HasLabels{replaceLabel}); err != nil {
		return fmt.Errorf("deleting the fixture's NodeClaims: %w", err)
	}
	pool := karpenterObject("NodePool", rf.pool)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, rf.cfg.EffectiveRules()[0].TimeoutsAnnotation()))
	if err := rf.admin.Patch(ctx, pool, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("clearing NodePool %s's guard: %w", rf.pool, err)
	}
	return nil
}

// replace makes a held node of the pool, owned by a NodeClaim, and reconciles it as the
// gate's ServiceAccount an hour after it was tainted: its NodeClaim must be gone.
func (rf *replaceFixture) replace(ctx context.Context) error {
	if err := rf.clear(ctx); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	name := "rbac-test-replace-" + rf.next()
	claim := karpenterObject(rule.KarpenterNodeClaimKind, name)
	claim.SetLabels(map[string]string{replaceLabel: "true"})
	if err := unstructured.SetNestedField(claim.Object, map[string]any{"nodeClassRef": nodeClassRef(), "requirements": []any{}}, "spec"); err != nil {
		return err
	}
	if err := rf.admin.Create(ctx, claim); err != nil {
		return fmt.Errorf("fixture: creating NodeClaim %s: %w", name, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{replaceLabel: "true", rule.KarpenterNodePoolLabel: rf.pool},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: rule.KarpenterAPIVersion, Kind: rule.KarpenterNodeClaimKind,
			Name: name, UID: claim.GetUID()}},
	}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{rf.cfg.EffectiveRules()[0].Taint}}}
	if err := rf.admin.Create(ctx, node); err != nil {
		return fmt.Errorf("fixture: creating node %s: %w", name, err)
	}
	r := &gate.Reconciler{Client: rf.sa, Reader: rf.sa, Writer: &gate.NodeWriter{Client: rf.sa, Reader: rf.sa},
		Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(time.Now().Add(time.Hour)), Config: &rf.cfg}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		return err
	}
	switch err := rf.admin.Get(ctx, client.ObjectKey{Name: name}, karpenterObject(rule.KarpenterNodeClaimKind, name)); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	return fmt.Errorf("NodeClaim %s still there after the reconcile of its timed-out node", name)
}

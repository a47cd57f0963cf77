package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/setup"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// saIdentity is who the deployed gate is: its ServiceAccount, with the groups the
// apiserver gives every ServiceAccount token.
var saIdentity = rest.ImpersonationConfig{
	UserName: "system:serviceaccount:" + gateNamespace + ":" + gateSA,
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + gateNamespace, "system:authenticated"},
}

// rbacPropagation bounds how long a role change takes to reach the apiserver's authorizer
// (it is fast, but not instant): operations are polled for their expected outcome.
const rbacPropagation = 10 * time.Second

func saConfig(t *testing.T) *rest.Config {
	t.Helper()
	rc := adminConfig(t)
	rc.Impersonate = saIdentity
	rc.QPS, rc.Burst = 200, 400
	return rc
}

// applyRBAC applies, for real, the RBAC objects of the default (self-signed) overlay as src
// renders it: the Namespace, the ServiceAccount, and the roles and bindings. It deletes them
// at the end.
func applyRBAC(t *testing.T, c client.Client, src source) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, o := range src.render(t, "self-signed") {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			objs = append(objs, o)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { deleteAll(t, c, objs) })
	if _, failed := applyAll(ctx, c, objs); len(failed) > 0 {
		for o, err := range failed {
			t.Errorf("applying %s: %v", describe(o), err)
		}
		t.FailNow()
	}
	return objs
}

// leaderElectionID is the Lease name cmd/gate uses; read from its source so it cannot drift.
func leaderElectionID(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../cmd/gate/main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`LeaderElectionID:\s*"([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal(`cmd/gate/main.go: no LeaderElectionID: "..." found`)
	}
	return string(m[1])
}

// ---------------------------------------------------------------------------------------
// (c) The gate works under exactly the deployed RBAC.

func TestGateUnderDeployedRBAC(t *testing.T) {
	c := adminClient(t)
	applyRBAC(t, c, sources[0])

	// The identity really is impersonated (and is not an admin): it cannot read Secrets.
	sa, err := client.New(saConfig(t), client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	err = wait(context.Background(), rbacPropagation, func() error {
		switch err := sa.List(context.Background(), &corev1.SecretList{}); {
		case err == nil:
			return fmt.Errorf("listing Secrets as %s: allowed, want Forbidden", saIdentity.UserName)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("listing Secrets as %s: got %w, want Forbidden", saIdentity.UserName, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("basic-join", func(t *testing.T) {
		// The whole gate (webhook, controller, events) as the deployed ServiceAccount: every
		// node registers tainted and is released once its init Pod is ready.
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		as := saIdentity
		r, err := sim.NewRunner(adminConfig(t), sim.Options{Gate: gateundertest.InProcess, GateAs: &as})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Load("../scenarios/basic-join.yaml")
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(ctx, sc)
		if err != nil {
			t.Fatalf("running %s: %v", sc.Name, err)
		}
		if !res.Passed {
			t.Errorf("%s failed under the deployed RBAC:\nfailures: %v\nviolations: %+v\nerrors: %v", sc.Name, res.Failures, res.Violations, res.Errors)
		}
		if res.Nodes == 0 || res.Released != res.Nodes {
			t.Errorf("released %d of %d nodes", res.Released, res.Nodes)
		}
	})

	t.Run("leader-election", func(t *testing.T) {
		// cmd/gate's leader election, through setup.NewManager, as the ServiceAccount: it
		// becomes leader (get + create of the Lease), its caches sync, and on shutdown it
		// releases the Lease (update).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		id := leaderElectionID(t)
		cfg := config.DefaultConfig()
		cfg.Webhook = false
		mgr, err := setup.NewManager(saConfig(t), &cfg, setup.ManagerOptions{
			Metrics:                       metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress:        "0",
			LeaderElection:                true,
			LeaderElectionID:              id,
			LeaderElectionNamespace:       gateNamespace,
			LeaderElectionReleaseOnCancel: true,
			Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		}, setup.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(ctx)
		defer mcancel()
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		select {
		case <-mgr.Elected():
		case err := <-done:
			t.Fatalf("manager stopped before it was elected: %v", err)
		case <-time.After(time.Minute):
			t.Fatalf("not elected leader within a minute as %s", saIdentity.UserName)
		}
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			t.Fatalf("caches did not sync")
		}
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: gateNamespace, Name: id}, lease); err != nil {
			t.Fatalf("leader Lease: %v", err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			t.Fatalf("Lease %s has no holder after election", id)
		}
		mcancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		err = wait(ctx, rbacPropagation, func() error {
			if err := c.Get(ctx, types.NamespacedName{Namespace: gateNamespace, Name: id}, lease); err != nil {
				return err
			}
			if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
				return fmt.Errorf("Lease still held by %s after shutdown", *h)
			}
			return nil
		})
		if err != nil {
			t.Errorf("releasing the Lease on shutdown: %v", err)
		}
	})
}

// ---------------------------------------------------------------------------------------
// (d) Every verb the roles grant is needed: without it, a real gate operation is Forbidden.

type perm struct{ Group, Resource, Verb string }

func (p perm) String() string {
	g := p.Group
	if g == "" {
		g = "core"
	}
	return g + "/" + p.Resource + ":" + p.Verb
}

// gateOp is one thing the gate does against the API, and the permissions it takes.
type gateOp struct {
	name  string
	needs []perm
	run   func(ctx context.Context) error
}

var (
	nodesGet        = perm{"", "nodes", "get"}
	nodesList       = perm{"", "nodes", "list"}
	nodesWatch      = perm{"", "nodes", "watch"}
	nodesPatch      = perm{"", "nodes", "patch"}
	podsGet         = perm{"", "pods", "get"}
	podsList        = perm{"", "pods", "list"}
	podsWatch       = perm{"", "pods", "watch"}
	eventsCreate    = perm{"events.k8s.io", "events", "create"}
	eventsPatch     = perm{"events.k8s.io", "events", "patch"}
	daemonsetsList  = perm{"apps", "daemonsets", "list"}
	daemonsetsWatch = perm{"apps", "daemonsets", "watch"}
	leasesGet       = perm{"coordination.k8s.io", "leases", "get"}
	leasesCreate    = perm{"coordination.k8s.io", "leases", "create"}
	leasesUpdate    = perm{"coordination.k8s.io", "leases", "update"}
)

// TestRBACIsMinimal runs for the roles of both installs, kustomize's and the Helm chart's.
func TestRBACIsMinimal(t *testing.T) {
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) { checkRBACIsMinimal(t, src) })
	}
}

func checkRBACIsMinimal(t *testing.T, src source) {
	t.Helper()
	c := adminClient(t)
	objs := applyRBAC(t, c, src)
	clusterRole := mustGet[rbacv1.ClusterRole](t, objs, "ClusterRole", "startupgate")
	role := mustGet[rbacv1.Role](t, objs, "Role", "startupgate-leader-election")
	f := newFixture(t, c)
	checkMinimal(t, c, f.ops(), []roleUnderTest{{clusterRole, &clusterRole.Rules}, {role, &role.Rules}}, nil)
}

// roleUnderTest is a role whose every verb checkMinimal removes in turn.
type roleUnderTest struct {
	obj   client.Object
	rules *[]rbacv1.PolicyRule
}

// checkMinimal proves the roles grant what ops need, and nothing more: every operation
// succeeds with the roles as applied; with any one verb of them removed, an operation that
// needs it is Forbidden on it and every other operation still succeeds. also are rules
// applied beside them and not varied.
func checkMinimal(t *testing.T, c client.Client, ops []gateOp, roles []roleUnderTest, also []rbacv1.PolicyRule) {
	t.Helper()
	granted := map[perm]bool{}
	for _, r := range also {
		for _, p := range rulePerms(r, r.Verbs) {
			granted[p] = true
		}
	}
	for _, tg := range roles {
		for _, r := range *tg.rules {
			for _, p := range rulePerms(r, r.Verbs) {
				granted[p] = true
			}
		}
	}
	for _, op := range ops {
		for _, p := range op.needs {
			if !granted[p] {
				t.Errorf("%s needs %s, which the shipped roles do not grant", op.name, p)
			}
		}
	}

	// check runs every operation and polls each for its expected outcome: Forbidden (on the
	// removed permission) when it needs one of removed, success otherwise.
	check := func(t *testing.T, removed map[perm]bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for _, op := range ops {
			wantForbidden := slices.ContainsFunc(op.needs, func(p perm) bool { return removed[p] })
			err := wait(ctx, rbacPropagation, func() error {
				err := op.run(ctx)
				switch {
				case wantForbidden && forbiddenOn(err, removed):
					return nil
				case wantForbidden && err == nil:
					return errors.New("want Forbidden, got success")
				case wantForbidden:
					return fmt.Errorf("want Forbidden, got %w", err)
				default:
					return err
				}
			})
			if err != nil {
				t.Errorf("%s: %v", op.name, err)
			}
		}
	}

	t.Run("full-roles", func(t *testing.T) { check(t, nil) })
	for _, tg := range roles {
		full := slices.Clone(*tg.rules)
		kind := tg.obj.GetObjectKind().GroupVersionKind().Kind
		for i, rule := range full {
			for _, verb := range rule.Verbs {
				name := fmt.Sprintf("%s-without-%s-%s", kind, strings.Join(rule.Resources, ","), verb)
				t.Run(name, func(t *testing.T) {
					removed := map[perm]bool{}
					for _, p := range rulePerms(rule, []string{verb}) {
						removed[p] = true
					}
					if !slices.ContainsFunc(ops, func(op gateOp) bool {
						return slices.ContainsFunc(op.needs, func(p perm) bool { return removed[p] })
					}) {
						t.Errorf("no gate operation needs %v: drop it from %s %s", keys(removed), kind, tg.obj.GetName())
						return
					}
					weak := slices.Clone(full)
					if len(rule.Verbs) == 1 {
						weak = slices.Delete(weak, i, i+1)
					} else {
						r := *rule.DeepCopy()
						r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == verb })
						weak[i] = r
					}
					*tg.rules = weak
					applyRole(t, c, tg.obj)
					defer func() {
						*tg.rules = full
						applyRole(t, c, tg.obj)
					}()
					check(t, removed)
				})
			}
		}
	}
	t.Run("full-roles-restored", func(t *testing.T) { check(t, nil) })
}

func keys(m map[perm]bool) []string {
	var out []string
	for p := range m {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

func rulePerms(r rbacv1.PolicyRule, verbs []string) []perm {
	var out []perm
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range verbs {
				out = append(out, perm{g, res, v})
			}
		}
	}
	return out
}

// forbiddenOn reports whether err is the RBAC authorizer refusing saIdentity one of the
// removed permissions — not any other failure.
func forbiddenOn(err error, removed map[perm]bool) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("User %q", saIdentity.UserName)) {
		return false
	}
	for p := range removed {
		if strings.Contains(msg, fmt.Sprintf("cannot %s resource %q in API group %q", p.Verb, p.Resource, p.Group)) {
			return true
		}
	}
	return false
}

// applyRole server-side applies a role as the test's field owner (rules is an atomic list,
// so the applied rules replace the stored ones).
func applyRole(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: m}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := apply(ctx, c, u); err != nil {
		t.Fatalf("applying %s: %v", describe(u), err)
	}
}

// fixture holds the objects the operations act on, created by the admin.
type fixture struct {
	admin client.Client
	sa    client.WithWatch
	saRC  *rest.Config
	saCS  kubernetes.Interface
	// cfg's taint is the one the fixture's gated node carries; absent's is on no node, so
	// operations with it only read.
	cfg, absent config.Config
	ns          string
	gatedNode   string
	busyNode    string
	busyPod     string
	daemonSet   string
	lease       string
	newLease    string
	event       *eventsv1.Event

	mu  sync.Mutex
	seq int
}

func newFixture(t *testing.T, admin client.Client) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	saRC := saConfig(t)
	sa, err := client.NewWithWatch(saRC, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	saCS, err := kubernetes.NewForConfig(saRC)
	if err != nil {
		t.Fatal(err)
	}
	// A namespace per subtest: the previous source's is still being deleted (the namespace
	// controller takes its time), and a create of the same name fails while it is.
	ns := "startupgate-rbac-test-" + strings.ToLower(path.Base(t.Name()))
	f := &fixture{admin: admin, sa: sa, saRC: saRC, saCS: saCS, ns: ns,
		gatedNode: "rbac-test-gated", busyNode: "rbac-test-busy", busyPod: "busy", daemonSet: "rbac-test-ds",
		lease: "rbac-test-lease", newLease: "rbac-test-lease-new"}
	f.cfg, f.absent = config.DefaultConfig(), config.DefaultConfig()
	f.cfg.Taint.Key = "rbac-test.startup.k8s.io/gated"
	f.absent.Taint.Key = "rbac-test.startup.k8s.io/absent"
	for _, c := range []*config.Config{&f.cfg, &f.absent} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}

	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.gatedNode}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{f.cfg.Taint}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.busyNode}},
		// A workload Pod bound to the busy node: backfill must leave that node alone.
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: f.busyPod, Namespace: f.ns}, Spec: corev1.PodSpec{
			NodeName: f.busyNode, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: f.daemonSet, Namespace: f.ns}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": f.daemonSet}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": f.daemonSet}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"rbac-test.startup.k8s.io/never": "true"},
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			}}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: f.lease, Namespace: gateNamespace}},
	}
	f.event = &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "rbac-test-series", Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NowMicro(),
		ReportingController: "startupgate", ReportingInstance: "rbac-test",
		Action: "Gate", Reason: gate.ReasonHeld, Type: corev1.EventTypeNormal, Note: "rbac test",
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: f.gatedNode},
	}
	objs = append(objs, f.event.DeepCopy())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(f.ns), client.GracePeriodSeconds(0))
		for i := len(objs) - 1; i >= 0; i-- {
			if err := admin.Delete(ctx, objs[i]); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting %s: %v", objs[i].GetName(), err)
			}
		}
		_ = admin.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: f.newLease, Namespace: gateNamespace}})
	})
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating fixture %T %s: %v", o, o.GetName(), err)
		}
	}
	return f
}

// seqLabel marks the objects a check changed, with the value next gave it.
const seqLabel = "rbac-test.startup.k8s.io/seq"

func (f *fixture) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	return strconv.Itoa(f.seq)
}

// gateNode puts the gated node back to gated: the test taint on, completedAt off.
func (f *fixture) gateNode(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := f.admin.Get(ctx, types.NamespacedName{Name: f.gatedNode}, n); err != nil {
			return err
		}
		delete(n.Annotations, f.cfg.CompletedAnnotation)
		if !f.cfg.HasTaint(n) {
			n.Spec.Taints = append(n.Spec.Taints, f.cfg.Taint)
		}
		return f.admin.Update(ctx, n)
	})
}

func (f *fixture) lock(name string) (resourcelock.Interface, error) {
	return leaderelection.NewResourceLock(f.saRC, nopProvider{}, leaderelection.Options{
		LeaderElection: true, LeaderElectionID: name, LeaderElectionNamespace: gateNamespace, RenewDeadline: 10 * time.Second,
	})
}

func leaderRecord() resourcelock.LeaderElectionRecord {
	now := metav1.Now()
	return resourcelock.LeaderElectionRecord{HolderIdentity: "rbac-test", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
}

// nopProvider is the recorder provider controller-runtime's resource lock takes; the lock
// records events only when run by an elector, which these operations do not do.
type nopProvider struct{}

func (nopProvider) GetEventRecorderFor(string) record.EventRecorder { return &record.FakeRecorder{} }
func (nopProvider) GetEventRecorder(string) events.EventRecorder    { return &events.FakeRecorder{} }

func watchOnce(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	w, err := c.Watch(ctx, list, opts...)
	if err != nil {
		return err
	}
	w.Stop()
	return nil
}

// ops are the gate's API operations, each driven through gate code where the gate exposes
// it, and otherwise by the same call its informers or event sink make.
func (f *fixture) ops() []gateOp {
	sink := &events.EventSinkImpl{Interface: f.saCS.EventsV1()}
	return []gateOp{
		{
			name:  "gate.ReleaseNodes(NODE) reads the node (gate release NODE; NodeWriter's re-read after a conflict)",
			needs: []perm{nodesGet},
			run: func(ctx context.Context) error {
				_, err := gate.ReleaseNodes(ctx, f.sa, &f.absent, time.Now(), f.gatedNode)
				return err
			},
		},
		{
			name:  "gate.ReleaseNodes() lists nodes (gate release --all)",
			needs: []perm{nodesList},
			run: func(ctx context.Context) error {
				_, err := gate.ReleaseNodes(ctx, f.sa, &f.absent, time.Now())
				return err
			},
		},
		{
			name:  "gate.ReleaseNodes(NODE) releases a gated node (NodeWriter's guarded merge patch)",
			needs: []perm{nodesGet, nodesPatch},
			run: func(ctx context.Context) error {
				if err := f.gateNode(ctx); err != nil {
					return fmt.Errorf("fixture: %w", err)
				}
				released, err := gate.ReleaseNodes(ctx, f.sa, &f.cfg, time.Now(), f.gatedNode)
				if err != nil {
					return err
				}
				if !slices.Equal(released, []string{f.gatedNode}) {
					return fmt.Errorf("released %v, want [%s]", released, f.gatedNode)
				}
				return nil
			},
		},
		{
			name:  "gate cache (setup.CacheOptions): Nodes, init Pods and DaemonSets sync and see changes",
			needs: []perm{nodesWatch, podsWatch, daemonsetsWatch},
			run:   f.gateCache,
		},
		{
			name:  "watch nodes (the Node informer)",
			needs: []perm{nodesWatch},
			run:   func(ctx context.Context) error { return watchOnce(ctx, f.sa, &corev1.NodeList{}) },
		},
		{
			name:  "gate.PodGuard reads the Pod of a pods/binding",
			needs: []perm{podsGet},
			run:   f.podGuard,
		},
		{
			name:  "gate.Backfiller lists the Pods on a node (spec.nodeName field selector) and leaves a busy node alone",
			needs: []perm{podsList},
			run:   f.backfillBusy,
		},
		{
			name:  "watch init Pods by label (the init-Pod informer)",
			needs: []perm{podsWatch},
			run: func(ctx context.Context) error {
				return watchOnce(ctx, f.sa, &corev1.PodList{}, client.MatchingLabelsSelector{Selector: f.cfg.PodScopes()[0].Selector})
			},
		},
		{
			name:  "list DaemonSets (the DaemonSet informer's LIST, used whenever the apiserver does not stream a watch-list)",
			needs: []perm{daemonsetsList},
			run:   func(ctx context.Context) error { return f.sa.List(ctx, &appsv1.DaemonSetList{}) },
		},
		{
			name:  "watch DaemonSets (the DaemonSet informer)",
			needs: []perm{daemonsetsWatch},
			run:   func(ctx context.Context) error { return watchOnce(ctx, f.sa, &appsv1.DaemonSetList{}) },
		},
		{
			name:  "create an Event through client-go's events/v1 sink (the gate's event recorder)",
			needs: []perm{eventsCreate},
			run: func(ctx context.Context) error {
				ev := f.event.DeepCopy()
				ev.Name = "rbac-test-" + f.next()
				ev.EventTime = metav1.NowMicro()
				_, err := sink.Create(ctx, ev)
				return err
			},
		},
		{
			name:  "patch an Event's series through the events/v1 sink (a repeated event)",
			needs: []perm{eventsPatch},
			run: func(ctx context.Context) error {
				n, _ := strconv.Atoi(f.next())
				patch := fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":%q}}`, n+1, metav1.NowMicro().Format(metav1.RFC3339Micro))
				_, err := sink.Patch(ctx, f.event, []byte(patch))
				return err
			},
		},
		{
			name:  "leader election lock (controller-runtime leases lock): read the Lease",
			needs: []perm{leasesGet},
			run: func(ctx context.Context) error {
				l, err := f.lock(f.lease)
				if err != nil {
					return err
				}
				_, _, err = l.Get(ctx)
				return err
			},
		},
		{
			name:  "leader election lock: create the Lease (first leader)",
			needs: []perm{leasesCreate},
			run: func(ctx context.Context) error {
				err := f.admin.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: f.newLease, Namespace: gateNamespace}})
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("fixture: %w", err)
				}
				l, err := f.lock(f.newLease)
				if err != nil {
					return err
				}
				return l.Create(ctx, leaderRecord())
			},
		},
		{
			name:  "leader election lock: renew or take over the Lease",
			needs: []perm{leasesGet, leasesUpdate},
			run: func(ctx context.Context) error {
				l, err := f.lock(f.lease)
				if err != nil {
					return err
				}
				if _, _, err := l.Get(ctx); err != nil {
					return err
				}
				return l.Update(ctx, leaderRecord())
			},
		},
	}
}

// podGuard asks the gate's Pod guard about a binding of a non-tolerating Pod to the gated
// node. It must deny, having read the Pod: a guard that cannot read it denies too (the node
// is held), saying that the Pod cannot be read, which is the error.
func (f *fixture) podGuard(ctx context.Context) error {
	if err := f.gateNode(ctx); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: f.busyPod, Namespace: f.ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: f.gatedNode},
	}
	raw, err := json.Marshal(binding)
	if err != nil {
		return err
	}
	// Nodes come from the gate's cache in production (covered by the watch operations).
	pg := &gate.PodGuard{Cache: f.admin, API: f.sa, Config: &f.cfg}
	resp := pg.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:         types.UID("rbac-test-" + f.next()),
		Kind:        metav1.GroupVersionKind{Version: "v1", Kind: "Binding"},
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: "binding",
		Name:        f.busyPod,
		Namespace:   f.ns,
		Operation:   admissionv1.Create,
		Object:      runtime.RawExtension{Raw: raw},
	}})
	switch {
	case resp.Allowed:
		return errors.New("pod guard allowed a non-tolerating Pod onto a gated node")
	case resp.Result != nil && resp.Result.Code == http.StatusForbidden && !strings.Contains(resp.Result.Message, "cannot be read now"):
		return nil // denied, as it should be
	case resp.Result != nil:
		return errors.New(resp.Result.Message)
	}
	return errors.New("pod guard returned no result")
}

// backfillBusy runs backfill on an untainted node that runs a workload Pod: it must look,
// find the Pod, and not taint the node.
func (f *fixture) backfillBusy(ctx context.Context) error {
	node := &corev1.Node{}
	if err := f.admin.Get(ctx, types.NamespacedName{Name: f.busyNode}, node); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	bf := &gate.Backfiller{
		Writer:   &gate.NodeWriter{Client: f.sa, Reader: f.sa},
		Reader:   f.sa,
		Recorder: &events.FakeRecorder{},
		Clock:    clock.RealClock{},
		Config:   &f.cfg,
	}
	if err := bf.Node(ctx, node); err != nil {
		return err
	}
	if err := f.admin.Get(ctx, types.NamespacedName{Name: f.busyNode}, node); err != nil {
		return err
	}
	if f.cfg.HasTaint(node) {
		return errors.New("backfill tainted a busy node")
	}
	return nil
}

// gateCache builds the gate's own cache (setup.CacheOptions) as the ServiceAccount, waits
// for it to sync, then changes a Node, a DaemonSet and an init Pod and waits for the cache
// to see all three — which takes working watches. A watch the apiserver refuses is
// reported through the informers' watch error handler.
func (f *fixture) gateCache(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var (
		mu        sync.Mutex
		watchErrs []error
	)
	refused := func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range watchErrs {
			if apierrors.IsForbidden(err) || strings.Contains(err.Error(), "is forbidden") {
				return err
			}
		}
		return nil
	}
	// The Node is marked with a label of the test's own, which the gate's cache keeps only
	// when told to.
	opts := setup.CacheOptions(&f.cfg, setup.Options{NodeLabels: []string{seqLabel}})
	opts.Scheme = gate.Scheme()
	opts.DefaultWatchErrorHandler = func(_ context.Context, _ *toolscache.Reflector, err error) {
		mu.Lock()
		watchErrs = append(watchErrs, err)
		mu.Unlock()
	}
	ca, err := cache.New(f.saRC, opts)
	if err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}, &appsv1.DaemonSet{}} {
		if _, err := ca.GetInformer(ctx, obj); err != nil {
			return errors.Join(refused(), fmt.Errorf("syncing %T: %w", obj, err))
		}
	}

	seq := f.next()
	mark := map[string]any{"metadata": map[string]any{"labels": map[string]string{seqLabel: seq}}}
	patch, _ := json.Marshal(mark)
	if err := f.admin.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.gatedNode}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	if err := f.admin.Patch(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: f.daemonSet, Namespace: f.ns}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	initLabels := map[string]string{}
	sel := strings.SplitN(config.DefaultInitLabel, "=", 2)
	initLabels[sel[0]] = sel[1]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "init-" + seq, Namespace: f.ns, Labels: initLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	if err := f.admin.Create(ctx, pod); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	seen := func() error {
		n := &corev1.Node{}
		if err := ca.Get(ctx, types.NamespacedName{Name: f.gatedNode}, n); err != nil {
			return fmt.Errorf("cache did not see the Node change (%w)", err)
		}
		if n.Labels[seqLabel] != seq {
			return errors.New("cache did not see the Node change")
		}
		ds := &appsv1.DaemonSet{}
		if err := ca.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: f.daemonSet}, ds); err != nil {
			return fmt.Errorf("cache did not see the DaemonSet change (%w)", err)
		}
		if ds.Labels[seqLabel] != seq {
			return errors.New("cache did not see the DaemonSet change")
		}
		if err := ca.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
			return fmt.Errorf("cache did not see the new init Pod (%w)", err)
		}
		return nil
	}
	err = wait(ctx, 5*time.Second, func() error {
		if refused() != nil {
			return nil //nolint:nilerr // a refused watch ends the wait; the refusal is returned below
		}
		return seen()
	})
	if r := refused(); r != nil {
		return r
	}
	return err
}

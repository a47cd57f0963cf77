package gate

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/internal/testobj"
)

var (
	foreignTaint  = corev1.Taint{Key: "other.io/x", Effect: corev1.TaintEffectNoSchedule}
	notReadyTaint = corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	gpuTaint      = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoExecute}
	nodesResource = schema.GroupResource{Resource: "nodes"}
)

// calls counts the writes and reads that reach the fake apiserver, and records every patch body.
type calls struct {
	mu      sync.Mutex
	gets    int
	pinned  map[client.ObjectKey]string // the resourceVersion of each get that had one: the apiserver serves those from its watch cache
	lists   int
	patches int
	updates int
	creates int
	bodies  []string
}

func (c *calls) writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patches + c.updates + c.creates
}

func (c *calls) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets + c.lists
}

// counting wraps funcs so that every Get/List/Patch/Update/Create is counted (and every patch body
// recorded) before the given hook, if any, runs.
func (c *calls) counting(funcs interceptor.Funcs) interceptor.Funcs {
	out := funcs
	out.Get = func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		c.mu.Lock()
		c.gets++
		for _, o := range opts {
			if g, ok := o.(*client.GetOptions); ok && g.Raw != nil && g.Raw.ResourceVersion != "" {
				if c.pinned == nil {
					c.pinned = map[client.ObjectKey]string{}
				}
				c.pinned[key] = g.Raw.ResourceVersion
			}
		}
		c.mu.Unlock()
		if funcs.Get != nil {
			return funcs.Get(ctx, cl, key, obj, opts...)
		}
		return cl.Get(ctx, key, obj, opts...)
	}
	out.List = func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		c.mu.Lock()
		c.lists++
		c.mu.Unlock()
		if funcs.List != nil {
			return funcs.List(ctx, cl, list, opts...)
		}
		return cl.List(ctx, list, opts...)
	}
	out.Patch = func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		data, err := patch.Data(obj)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.patches++
		c.bodies = append(c.bodies, string(data))
		c.mu.Unlock()
		if funcs.Patch != nil {
			return funcs.Patch(ctx, cl, obj, patch, opts...)
		}
		return cl.Patch(ctx, obj, patch, opts...)
	}
	out.Update = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		c.mu.Lock()
		c.updates++
		c.mu.Unlock()
		if funcs.Update != nil {
			return funcs.Update(ctx, cl, obj, opts...)
		}
		return cl.Update(ctx, obj, opts...)
	}
	out.Create = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		c.mu.Lock()
		c.creates++
		c.mu.Unlock()
		if funcs.Create != nil {
			return funcs.Create(ctx, cl, obj, opts...)
		}
		return cl.Create(ctx, obj, opts...)
	}
	return out
}

func podNodeNameIndex(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }

// newFakeClient returns a fake client holding objs, with the spec.nodeName Pod index, whose
// calls are counted and go through funcs.
func newFakeClient(funcs interceptor.Funcs, objs ...client.Object) (client.WithWatch, *calls) {
	cs := &calls{}
	c := fake.NewClientBuilder().
		WithScheme(Scheme()).
		WithObjects(objs...).
		WithIndex(&corev1.Pod{}, PodNodeNameField, podNodeNameIndex).
		WithInterceptorFuncs(cs.counting(funcs)).
		Build()
	return c, cs
}

func getNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("getting node %q: %v", name, err)
	}
	return n
}

func TestWriteRelease(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	now := t0.Add(90 * time.Second)
	c, cs := newFakeClient(interceptor.Funcs{},
		testobj.Node("n1", t0, testobj.Taints(notReadyTaint, gateTaint, gpuTaint), testobj.NodeAnnotation("keep.me/x", "y")))
	node := getNode(t, c, "n1")
	cs.gets = 0

	w := &NodeWriter{Client: c, Reader: c}
	written, wrote, err := w.Write(ctx, node, releaseMutation(cfg.EffectiveRules()[0], now))
	if err != nil || !wrote {
		t.Fatalf("Write() = (_, %v, %v), want (_, true, nil)", wrote, err)
	}
	if cs.gets != 0 {
		t.Errorf("Write() read the node %d times on the conflict-free path, want 0", cs.gets)
	}
	stored := getNode(t, c, "n1")
	if diff := cmp.Diff([]corev1.Taint{notReadyTaint, gpuTaint}, stored.Spec.Taints); diff != "" {
		t.Errorf("stored taints mismatch (-want +got):\n%s", diff)
	}
	wantAnn := map[string]string{"keep.me/x": "y", config.DefaultCompletedAnnotation: strconv.FormatInt(now.Unix(), 10), unwarmed: "true"}
	if diff := cmp.Diff(wantAnn, stored.Annotations); diff != "" {
		t.Errorf("stored annotations mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(stored.Spec.Taints, written.Spec.Taints); diff != "" {
		t.Errorf("returned node's taints differ from the stored ones (-stored +returned):\n%s", diff)
	}
	if cs.patches != 1 {
		t.Errorf("Write() sent %d patches, want 1", cs.patches)
	}
	if node.Spec.Taints[1] != gateTaint {
		t.Errorf("Write() modified the node it was given: taints %v", node.Spec.Taints)
	}
}

// TestWritePatchCarriesResourceVersion: spec.taints is atomic, so the patch must be guarded by
// the resourceVersion it was computed from.
func TestWritePatchCarriesResourceVersion(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	c, cs := newFakeClient(interceptor.Funcs{}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
	node := getNode(t, c, "n1")
	if _, _, err := (&NodeWriter{Client: c, Reader: c}).Write(context.Background(), node, releaseMutation(cfg.EffectiveRules()[0], t0)); err != nil {
		t.Fatalf("Write() = %v", err)
	}
	if len(cs.bodies) != 1 {
		t.Fatalf("got %d patches, want 1", len(cs.bodies))
	}
	body := cs.bodies[0]
	if want := `"resourceVersion":"` + node.ResourceVersion + `"`; !strings.Contains(body, want) {
		t.Errorf("patch %s does not carry %s", body, want)
	}
	if !strings.Contains(body, `"taints":null`) {
		t.Errorf("patch %s does not clear the taints", body)
	}
}

func TestWriteConflictReReads(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	first := true
	c, cs := newFakeClient(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if !first {
				return cl.Patch(ctx, obj, patch, opts...)
			}
			first = false
			// Another controller adds its taint between our read and our write.
			other := &corev1.Node{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			other.Spec.Taints = append(other.Spec.Taints, foreignTaint)
			if err := cl.Update(ctx, other); err != nil {
				return err
			}
			return apierrors.NewConflict(nodesResource, obj.GetName(), errors.New("injected"))
		},
	}, testobj.Node("n1", t0, testobj.Taints(notReadyTaint, gateTaint)))
	node := getNode(t, c, "n1")
	cs.gets = 0

	written, wrote, err := (&NodeWriter{Client: c, Reader: c}).Write(ctx, node, releaseMutation(cfg.EffectiveRules()[0], t0))
	if err != nil || !wrote {
		t.Fatalf("Write() = (_, %v, %v), want (_, true, nil)", wrote, err)
	}
	if cs.gets != 1 {
		t.Errorf("Write() read the node %d times, want exactly 1 fresh re-read after the conflict", cs.gets)
	}
	stored := getNode(t, c, "n1")
	if diff := cmp.Diff([]corev1.Taint{notReadyTaint, foreignTaint}, stored.Spec.Taints); diff != "" {
		t.Errorf("stored taints mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(stored.Spec.Taints, written.Spec.Taints); diff != "" {
		t.Errorf("returned node's taints differ from the stored ones (-stored +returned):\n%s", diff)
	}
	if cs.patches != 2 {
		t.Errorf("Write() sent %d patches, want 2", cs.patches)
	}
	for i, b := range cs.bodies {
		if !strings.Contains(b, `"resourceVersion"`) {
			t.Errorf("patch %d %s carries no resourceVersion", i, b)
		}
	}
}

// TestWriteStaleNodeRejected: without an injected error, a write computed from a stale copy
// is rejected by the (fake) apiserver thanks to the resourceVersion, and the retry keeps the
// taint another controller added.
func TestWriteStaleNodeRejected(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	c, cs := newFakeClient(interceptor.Funcs{}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
	stale := getNode(t, c, "n1")

	other := stale.DeepCopy()
	other.Spec.Taints = append(other.Spec.Taints, foreignTaint)
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&NodeWriter{Client: c, Reader: c}).Write(ctx, stale, releaseMutation(cfg.EffectiveRules()[0], t0)); err != nil {
		t.Fatalf("Write() = %v", err)
	}
	stored := getNode(t, c, "n1")
	if diff := cmp.Diff([]corev1.Taint{foreignTaint}, stored.Spec.Taints); diff != "" {
		t.Errorf("stored taints mismatch (-want +got):\n%s", diff)
	}
	if cs.patches != 2 {
		t.Errorf("Write() sent %d patches, want 2 (one rejected, one after the re-read)", cs.patches)
	}
}

func TestWriteNoChangeNoPatch(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	tests := []struct {
		name   string
		node   *corev1.Node
		mutate func(*config.Config) Mutation
	}{
		{
			name:   "release of a released, untainted node",
			node:   testobj.Node("n1", t0, testobj.Taints(notReadyTaint), testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			mutate: func(c *config.Config) Mutation { return releaseMutation(c.EffectiveRules()[0], t0) },
		},
		{
			name:   "taint of a tainted node",
			node:   testobj.Node("n1", t0, testobj.Taints(gateTaint)),
			mutate: func(c *config.Config) Mutation { return taintMutation(c.EffectiveRules()[0]) },
		},
		{
			name:   "taint of a node tainted with another value",
			node:   testobj.Node("n1", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			mutate: func(c *config.Config) Mutation { return taintMutation(c.EffectiveRules()[0]) },
		},
		{
			name:   "taint of a released node",
			node:   testobj.Node("n1", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			mutate: func(c *config.Config) Mutation { return taintMutation(c.EffectiveRules()[0]) },
		},
		{
			name:   "no-op mutation",
			node:   testobj.Node("n1", t0, testobj.Taints(gateTaint)),
			mutate: func(*config.Config) Mutation { return func(*corev1.Node) {} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, cs := newFakeClient(interceptor.Funcs{}, tc.node)
			node := getNode(t, c, "n1")
			got, wrote, err := (&NodeWriter{Client: c, Reader: c}).Write(context.Background(), node, tc.mutate(cfg))
			if err != nil || wrote {
				t.Fatalf("Write() = (_, %v, %v), want (_, false, nil)", wrote, err)
			}
			if cs.writes() != 0 {
				t.Errorf("Write() performed %d writes, want 0", cs.writes())
			}
			if diff := cmp.Diff(node, got); diff != "" {
				t.Errorf("Write() returned a different node (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteNodeReplaced(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	c, cs := newFakeClient(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			old := &corev1.Node{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
				return err
			}
			if err := cl.Delete(ctx, old); err != nil {
				return err
			}
			// The autoscaler re-creates a node under the same name; the webhook taints it.
			fresh := testobj.Node(obj.GetName(), t0.Add(time.Hour), testobj.Taints(gateTaint))
			fresh.UID = types.UID("replacement-uid")
			if err := cl.Create(ctx, fresh); err != nil {
				return err
			}
			return apierrors.NewConflict(nodesResource, obj.GetName(), errors.New("injected"))
		},
	}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
	node := getNode(t, c, "n1")

	_, wrote, err := (&NodeWriter{Client: c, Reader: c}).Write(ctx, node, releaseMutation(cfg.EffectiveRules()[0], t0))
	if !errors.Is(err, ErrNodeReplaced) {
		t.Fatalf("Write() error = %v, want ErrNodeReplaced", err)
	}
	if wrote {
		t.Errorf("Write() reported a write for a replaced node")
	}
	if !strings.Contains(err.Error(), `"n1"`) {
		t.Errorf("Write() error %q does not name the node", err)
	}
	stored := getNode(t, c, "n1")
	if stored.UID != "replacement-uid" || !cfg.HasTaint(stored) || cfg.Released(stored) {
		t.Errorf("the replacement node was changed: uid %s taints %v annotations %v", stored.UID, stored.Spec.Taints, stored.Annotations)
	}
	if cs.patches != 1 {
		t.Errorf("Write() sent %d patches, want 1", cs.patches)
	}
}

func TestWriteErrors(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	tests := []struct {
		name        string
		patch       func(n int) error // error for the n-th patch (1-based), or nil to pass through
		reread      error
		wantPatches int
		wantErr     func(error) bool
	}{
		{
			name:        "forbidden is not retried",
			patch:       func(int) error { return apierrors.NewForbidden(nodesResource, "n1", errors.New("rbac")) },
			wantPatches: 1,
			wantErr:     apierrors.IsForbidden,
		},
		{
			name:        "persistent conflict gives up after the retry budget",
			patch:       func(int) error { return apierrors.NewConflict(nodesResource, "n1", errors.New("injected")) },
			wantPatches: 5, // retry.DefaultRetry.Steps
			wantErr:     apierrors.IsConflict,
		},
		{
			name: "node deleted before the re-read",
			patch: func(n int) error {
				return apierrors.NewConflict(nodesResource, "n1", errors.New("injected"))
			},
			reread:      apierrors.NewNotFound(nodesResource, "n1"),
			wantPatches: 1,
			wantErr:     apierrors.IsNotFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			c, cs := newFakeClient(interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					n++
					if err := tc.patch(n); err != nil {
						return err
					}
					return cl.Patch(ctx, obj, patch, opts...)
				},
			}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
			node := getNode(t, c, "n1")
			var reader client.Reader = c
			if tc.reread != nil {
				reader = errReader{tc.reread}
			}
			_, wrote, err := (&NodeWriter{Client: c, Reader: reader}).Write(context.Background(), node, releaseMutation(cfg.EffectiveRules()[0], t0))
			if err == nil || !tc.wantErr(err) {
				t.Fatalf("Write() error = %v, want a matching error", err)
			}
			if wrote {
				t.Errorf("Write() reported a write on error")
			}
			if cs.patches != tc.wantPatches {
				t.Errorf("Write() sent %d patches, want %d", cs.patches, tc.wantPatches)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}

func (r errReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return r.err
}

func TestReleaseMutation(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	now := time.Unix(1767225600, 999_000_000) // sub-second part is dropped
	nowStr := "1767225600"
	tests := []struct {
		name     string
		node     *corev1.Node
		wantTnt  []corev1.Taint
		wantAnns map[string]string
	}{
		{
			name:     "only the gate taint",
			node:     testobj.Node("n", t0, testobj.Taints(gateTaint)),
			wantTnt:  nil,
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
		{
			name:     "other taints kept in order",
			node:     testobj.Node("n", t0, testobj.Taints(gpuTaint, gateTaint, notReadyTaint, foreignTaint)),
			wantTnt:  []corev1.Taint{gpuTaint, notReadyTaint, foreignTaint},
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
		{
			name:     "gate taint registered with another value is removed",
			node:     testobj.Node("n", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			wantTnt:  nil,
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
		{
			name:     "duplicate gate taints are all removed",
			node:     testobj.Node("n", t0, testobj.Taints(gateTaint, foreignTaint, gateTaint)),
			wantTnt:  []corev1.Taint{foreignTaint},
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
		{
			name:     "same key, other effect is not the gate's taint",
			node:     testobj.Node("n", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute}, gateTaint)),
			wantTnt:  []corev1.Taint{{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute}},
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
		{
			name:     "completedAt already present is never overwritten",
			node:     testobj.Node("n", t0, testobj.Taints(gateTaint), testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")),
			wantTnt:  nil,
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: "1700000000"},
		},
		{
			name:     "completedAt already present, even empty, is never overwritten",
			node:     testobj.Node("n", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "")),
			wantTnt:  nil,
			wantAnns: map[string]string{config.DefaultCompletedAnnotation: ""},
		},
		{
			name:     "other annotations kept",
			node:     testobj.Node("n", t0, testobj.Taints(gateTaint), testobj.NodeAnnotation("a/b", "c")),
			wantTnt:  nil,
			wantAnns: map[string]string{"a/b": "c", config.DefaultCompletedAnnotation: nowStr, unwarmed: "true"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node.DeepCopy()
			releaseMutation(cfg.EffectiveRules()[0], now)(n)
			if diff := cmp.Diff(tc.wantTnt, n.Spec.Taints); diff != "" {
				t.Errorf("taints mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnns, n.Annotations); diff != "" {
				t.Errorf("annotations mismatch (-want +got):\n%s", diff)
			}
			// Idempotent: a second application changes nothing.
			again := n.DeepCopy()
			releaseMutation(cfg.EffectiveRules()[0], now.Add(time.Hour))(again)
			if diff := cmp.Diff(n, again); diff != "" {
				t.Errorf("releaseMutation is not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

func TestTaintMutation(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	otherValue := corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name    string
		node    *corev1.Node
		want    []corev1.Taint
		changed bool
	}{
		{"untainted", testobj.Node("n", t0), []corev1.Taint{gateTaint}, true},
		{"appended after other taints", testobj.Node("n", t0, testobj.Taints(notReadyTaint, gpuTaint)), []corev1.Taint{notReadyTaint, gpuTaint, gateTaint}, true},
		{"already tainted", testobj.Node("n", t0, testobj.Taints(notReadyTaint, gateTaint)), []corev1.Taint{notReadyTaint, gateTaint}, false},
		{"already tainted with another value", testobj.Node("n", t0, testobj.Taints(otherValue)), []corev1.Taint{otherValue}, false},
		{"same key, other effect", testobj.Node("n", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute})),
			[]corev1.Taint{{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute}, gateTaint}, true},
		{"released", testobj.Node("n", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node.DeepCopy()
			if got := cfg.EffectiveRules()[0].AddTaint(n); got != tc.changed {
				t.Errorf("addTaint() = %v, want %v", got, tc.changed)
			}
			if diff := cmp.Diff(tc.want, n.Spec.Taints); diff != "" {
				t.Errorf("taints mismatch (-want +got):\n%s", diff)
			}
			m := tc.node.DeepCopy()
			taintMutation(cfg.EffectiveRules()[0])(m)
			if diff := cmp.Diff(n, m); diff != "" {
				t.Errorf("taintMutation differs from addTaint (-addTaint +taintMutation):\n%s", diff)
			}
		})
	}
}

func TestReleaseNodes(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	now := t0.Add(time.Hour)
	nodes := func() []client.Object {
		return []client.Object{
			testobj.Node("a-tainted", t0, testobj.Taints(notReadyTaint, gateTaint)),
			testobj.Node("b-untainted", t0, testobj.Taints(notReadyTaint)),
			testobj.Node("c-other-value", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Value: "x", Effect: corev1.TaintEffectNoSchedule})),
			testobj.Node("d-released", t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1")),
			testobj.Node("e-other-effect", t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Effect: corev1.TaintEffectNoExecute})),
		}
	}
	tests := []struct {
		name        string
		names       []string
		want        []string
		wantErr     bool
		wantPatches int
	}{
		{name: "all tainted nodes", want: []string{"a-tainted", "c-other-value"}, wantPatches: 2},
		{name: "named tainted node", names: []string{"c-other-value"}, want: []string{"c-other-value"}, wantPatches: 1},
		{name: "named untainted nodes", names: []string{"b-untainted", "d-released", "e-other-effect"}, want: nil, wantPatches: 0},
		{name: "named missing node", names: []string{"a-tainted", "zz-missing"}, wantErr: true, wantPatches: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, cs := newFakeClient(interceptor.Funcs{}, nodes()...)
			got, err := ReleaseNodes(ctx, c, cfg, now, tc.names...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ReleaseNodes() error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReleaseNodes() mismatch (-want +got):\n%s", diff)
			}
			if cs.patches != tc.wantPatches {
				t.Errorf("ReleaseNodes() sent %d patches, want %d", cs.patches, tc.wantPatches)
			}
			for _, name := range got {
				n := getNode(t, c, name)
				if cfg.HasTaint(n) {
					t.Errorf("node %s still holds the taint: %v", name, n.Spec.Taints)
				}
				if v := n.Annotations[config.DefaultCompletedAnnotation]; v != strconv.FormatInt(now.Unix(), 10) {
					t.Errorf("node %s completedAt = %q, want %d", name, v, now.Unix())
				}
			}
			// Untouched nodes keep their state.
			if n := getNode(t, c, "b-untainted"); cfg.Released(n) {
				t.Errorf("untainted node was marked released")
			}
			if n := getNode(t, c, "e-other-effect"); len(n.Spec.Taints) != 1 || cfg.Released(n) {
				t.Errorf("node with the key under another effect was changed: %v %v", n.Spec.Taints, n.Annotations)
			}
		})
	}
}

// TestReleaseNodesSecondRunIsNoop: the uninstall path is safe to run twice.
func TestReleaseNodesSecondRunIsNoop(t *testing.T) {
	ctx := context.Background()
	cfg := testobj.ValidConfig(t, nil)
	c, cs := newFakeClient(interceptor.Funcs{}, testobj.Node("n1", t0, testobj.Taints(gateTaint)), testobj.Node("n2", t0, testobj.Taints(gateTaint)))
	if got, err := ReleaseNodes(ctx, c, cfg, t0.Add(time.Minute)); err != nil || len(got) != 2 {
		t.Fatalf("first ReleaseNodes() = %v, %v; want 2 nodes", got, err)
	}
	before := cs.writes()
	got, err := ReleaseNodes(ctx, c, cfg, t0.Add(time.Hour))
	if err != nil || len(got) != 0 {
		t.Errorf("second ReleaseNodes() = %v, %v; want none", got, err)
	}
	if w := cs.writes() - before; w != 0 {
		t.Errorf("second ReleaseNodes() performed %d writes, want 0", w)
	}
	if v := getNode(t, c, "n1").Annotations[config.DefaultCompletedAnnotation]; v != strconv.FormatInt(t0.Add(time.Minute).Unix(), 10) {
		t.Errorf("completedAt = %q, want the first release time", v)
	}
}

// TestWriteCancelledIsAnError: a write whose context is cancelled (the gate stopping) fails
// with that error. client-go's retry.OnError reads an error that wraps context.Canceled as
// its own interruption and returns the conflict before it, nil when there was none: Write
// then returned no node and no error, and the reconcilers in flight dereferenced the nil
// node (the explorer's crash points logged 1878 recovered panics).
func TestWriteCancelledIsAnError(t *testing.T) {
	c, _ := newFakeClient(interceptor.Funcs{Patch: func(ctx context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
		return &url.Error{Op: "Patch", URL: "https://apiserver/api/v1/nodes/" + obj.GetName(), Err: context.Canceled}
	}}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
	w := &NodeWriter{Client: c, Reader: c}
	cfg := testobj.ValidConfig(t, nil)
	written, wrote, err := w.Write(t.Context(), getNode(t, c, "n1"), releaseMutation(cfg.EffectiveRules()[0], t0))
	if !errors.Is(err, context.Canceled) || written != nil || wrote {
		t.Fatalf("Write = %v, %v, %v; want no node and the cancellation", written, wrote, err)
	}
}

// unwarmed marks a first release by hand: it did not rest on the rule's requirements.
const unwarmed = config.DefaultCompletedAnnotation + "_unwarmed"

package gate

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/testobj"
)

func TestNodeChanged(t *testing.T) {
	base := func() *corev1.Node {
		n := testobj.Node("n1", t0, testobj.Taints(gateTaint), testobj.NodeAnnotation("a", "b"),
			testobj.NodeCondition(corev1.NodeReady, corev1.ConditionFalse),
			testobj.NodeCondition(corev1.NodeMemoryPressure, corev1.ConditionFalse))
		n.ResourceVersion = "10"
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0)
		return n
	}
	withCond := func(c *config.Config) { c.RequiredCondition = "Ready=True" }
	tests := []struct {
		name   string
		cfg    func(*config.Config)
		change func(n *corev1.Node)
		want   bool
	}{
		{"identical", nil, func(*corev1.Node) {}, false},
		{"heartbeat and resourceVersion only", nil, func(n *corev1.Node) {
			n.ResourceVersion = "11"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		}, false},
		{"heartbeat with a required condition", withCond, func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		}, false},
		{"image list and capacity", nil, func(n *corev1.Node) {
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"x"}}}
			n.Status.Capacity = corev1.ResourceList{}
		}, false},
		{"taint removed", nil, func(n *corev1.Node) { n.Spec.Taints = nil }, true},
		{"taint added", nil, func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, foreignTaint) }, true},
		{"taint value changed", nil, func(n *corev1.Node) { n.Spec.Taints[0].Value = "other" }, true},
		{"label added", nil, func(n *corev1.Node) { n.Labels["pool"] = "gpu" }, true},
		{"label value changed", nil, func(n *corev1.Node) { n.Labels[corev1.LabelHostname] = "other" }, true},
		{"labels emptied", nil, func(n *corev1.Node) { n.Labels = map[string]string{} }, true},
		{"annotations removed", nil, func(n *corev1.Node) { n.Annotations = nil }, true},
		{"annotation added", nil, func(n *corev1.Node) { n.Annotations[config.DefaultCompletedAnnotation] = "1" }, true},
		{"annotation changed", nil, func(n *corev1.Node) { n.Annotations["a"] = "c" }, true},
		{"UID changed (node replaced)", nil, func(n *corev1.Node) { n.UID = "other" }, true},
		{"unschedulable changed", nil, func(n *corev1.Node) { n.Spec.Unschedulable = true }, false},
		{"required condition flipped", withCond, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue }, true},
		{"required condition flipped, none configured", nil, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue }, false},
		{"other condition flipped", withCond, func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionTrue }, false},
		{"required condition appears", func(c *config.Config) { c.RequiredCondition = "example.com/Net=True" }, func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "example.com/Net", Status: corev1.ConditionTrue})
		}, true},
		{"required condition reason only", withCond, func(n *corev1.Node) { n.Status.Conditions[0].Reason = "KubeletReady" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, tc.cfg)
			old := base()
			cur := old.DeepCopy()
			tc.change(cur)
			if got := nodeChanged(cfg, old, cur); got != tc.want {
				t.Errorf("nodeChanged() = %v, want %v", got, tc.want)
			}
			if got := nodeChanged(cfg, cur, old); got != tc.want {
				t.Errorf("nodeChanged() reversed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNodeChangedNilAndEmpty: no labels and no annotations are the same whether the map is
// nil or empty (one decoder gives nil, a trimmed copy an empty map).
func TestNodeChangedNilAndEmpty(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	old, cur := testobj.Node("n1", t0), testobj.Node("n1", t0)
	old.Labels, cur.Labels = nil, map[string]string{}
	old.Annotations, cur.Annotations = map[string]string{}, nil
	if nodeChanged(cfg, old, cur) || nodeChanged(cfg, cur, old) {
		t.Error("nodeChanged() = true for nil against empty labels and annotations, want false")
	}
}

// BenchmarkLabelsEqual prices the label comparison nodeChanged makes on every Node update,
// for a cloud node's 44 labels: by reflection (equality.Semantic, as before) and with
// maps.Equal.
func BenchmarkLabelsEqual(b *testing.B) {
	old := map[string]string{}
	for i := range 44 {
		old["node.example.com/label-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
	}
	cur := maps.Clone(old)
	b.Run("semantic", func(b *testing.B) {
		for b.Loop() {
			if !equality.Semantic.DeepEqual(old, cur) {
				b.Fatal("unequal")
			}
		}
	})
	b.Run("maps", func(b *testing.B) {
		for b.Loop() {
			if !maps.Equal(old, cur) {
				b.Fatal("unequal")
			}
		}
	})
}

type reconcilerEnv struct {
	r      *Reconciler
	c      client.WithWatch
	calls  *calls
	events *events.FakeRecorder
	clock  *clocktesting.FakeClock
}

func newReconcilerEnv(t *testing.T, cfg *config.Config, backfill bool, funcs interceptor.Funcs, objs ...client.Object) *reconcilerEnv {
	t.Helper()
	c, cs := newFakeClient(funcs, objs...)
	rec := events.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(t0.Add(10 * time.Minute))
	w := &NodeWriter{Client: c, Reader: c}
	r := &Reconciler{Client: c, Writer: w, Recorder: rec, Clock: clk, Config: cfg}
	if backfill {
		r.Backfill = &Backfiller{Writer: w, Reader: c, Recorder: rec, Clock: clk, Config: cfg}
	}
	return &reconcilerEnv{r: r, c: c, calls: cs, events: rec, clock: clk}
}

func (e *reconcilerEnv) reconcile(t *testing.T, name string) reconcile.Result {
	t.Helper()
	res, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatalf("Reconcile(%s) = %v", name, err)
	}
	return res
}

// drain returns the events recorded so far as "Type Reason".
func (e *reconcilerEnv) drain() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			f := strings.Fields(ev)
			out = append(out, f[0]+" "+f[1])
		default:
			return out
		}
	}
}

func TestReconcile(t *testing.T) {
	const name = "n1"
	now := t0.Add(10 * time.Minute) // the fake clock
	nowStr := strconv.FormatInt(now.Unix(), 10)
	ready := func(opts ...testobj.PodOpt) *corev1.Pod {
		return testobj.Pod("init-"+name, name, t0.Add(time.Second), append([]testobj.PodOpt{testobj.ReadyAt(t0.Add(time.Minute))}, opts...)...)
	}
	notReady := testobj.Pod("init-"+name, name, t0.Add(time.Second))
	workload := testobj.Pod("web", name, t0.Add(time.Minute), testobj.Namespace("default"), testobj.Labels(map[string]string{"app": "web"}))

	tests := []struct {
		name       string
		cfg        func(*config.Config)
		backfill   bool
		objs       []client.Object
		want       reconcile.Result
		wantWrites int
		wantTaints []corev1.Taint
		wantAnn    string // completedAt on the stored node ("" = absent)
		wantEvents []string
	}{
		{
			name:       "gated node with a ready init pod is released in one patch",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(notReadyTaint, gateTaint)), ready()},
			wantWrites: 1,
			wantTaints: []corev1.Taint{notReadyTaint},
			wantAnn:    nowStr,
			wantEvents: []string{"Normal " + ReasonHeld, "Normal " + ReasonReleased},
		},
		{
			name:       "gate taint registered with another value is released",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(corev1.Taint{Key: config.DefaultTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})), ready()},
			wantWrites: 1,
			wantAnn:    nowStr,
			wantEvents: []string{"Normal " + ReasonHeld, "Normal " + ReasonReleased},
		},
		{
			name:       "not ready, max hold configured: requeue at the deadline, no write",
			cfg:        func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 15 * time.Minute} },
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), notReady},
			want:       reconcile.Result{RequeueAfter: 5 * time.Minute},
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonHeld},
		},
		{
			name:       "not ready, no max hold: wait for an event, no write",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), notReady},
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonHeld},
		},
		{
			name:       "no init pod yet",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), workload},
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonHeld},
		},
		{
			// A GPU pool's taint the init DaemonSet does not tolerate: its Pod never comes,
			// and the hold says so once, on the node.
			name: "no init pod, its DaemonSet kept off by another taint: held, and said so",
			objs: []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint, corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule})),
				&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "init", Namespace: "kube-system"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"startup.k8s.io/component": "init"}},
					Spec:       corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: gateTaint.Key, Operator: corev1.TolerationOpExists}}}}}}},
			wantTaints: []corev1.Taint{gateTaint, {Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
			wantEvents: []string{"Normal " + ReasonHeld, "Warning " + ReasonComponentBlocked},
		},
		{
			name:       "ready pod of a previous node with the same name does not release",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), testobj.Pod("init-old", name, t0.Add(-time.Hour), testobj.ReadyAt(t0.Add(-50*time.Minute)))},
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonHeld},
		},
		{
			name:       "ready inside the minimum hold: requeue at its end",
			cfg:        func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 12 * time.Minute} },
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), ready()},
			want:       reconcile.Result{RequeueAfter: 2 * time.Minute},
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonHeld},
		},
		{
			name:       "max hold passed, release policy: released with a warning",
			cfg:        func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 5 * time.Minute} },
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint)), notReady},
			wantWrites: 1,
			wantAnn:    nowStr,
			wantEvents: []string{"Normal " + ReasonHeld, "Warning " + ReasonTimedOut, "Normal " + ReasonReleased},
		},
		{
			name:       "released node: steady state, zero writes",
			backfill:   true,
			objs:       []client.Object{testobj.Node(name, t0, testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")), notReady},
			wantAnn:    "1700000000",
			wantEvents: nil,
		},
		{
			name:       "released node that holds the taint again is left alone",
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(gateTaint), testobj.NodeAnnotation(config.DefaultCompletedAnnotation, "1700000000")), ready()},
			wantTaints: []corev1.Taint{gateTaint},
			wantAnn:    "1700000000",
		},
		{
			name:       "untainted gated node, backfill, only a DaemonSet pod: tainted",
			backfill:   true,
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(notReadyTaint)), testobj.Pod("cni-x", name, t0, testobj.OwnedByDaemonSet("cni"), testobj.Labels(map[string]string{"app": "cni"}))},
			wantWrites: 1,
			wantTaints: []corev1.Taint{notReadyTaint, gateTaint},
			wantEvents: []string{"Normal " + ReasonBackfilled},
		},
		{
			name:     "untainted gated node, backfill, no pod at all: tainted",
			backfill: true,
			objs:     []client.Object{testobj.Node(name, t0)},
			// idle
			wantWrites: 1,
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonBackfilled},
		},
		{
			name:     "untainted gated node, backfill, mirror, finished and tolerating pods: tainted",
			backfill: true,
			objs: []client.Object{
				testobj.Node(name, t0),
				testobj.Pod("static", name, t0, testobj.PodAnnotation(mirrorPodAnnotation, "x"), testobj.Labels(nil)),
				testobj.Pod("job", name, t0, testobj.Labels(nil), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				testobj.Pod("tol", name, t0, testobj.Labels(nil), testobj.Tolerations(corev1.Toleration{Key: config.DefaultTaintKey, Operator: corev1.TolerationOpExists})),
			},
			wantWrites: 1,
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonBackfilled},
		},
		{
			name:       "untainted gated node, backfill, a workload pod: untouched",
			backfill:   true,
			objs:       []client.Object{testobj.Node(name, t0, testobj.Taints(notReadyTaint)), testobj.Pod("cni-x", name, t0, testobj.OwnedByDaemonSet("cni")), workload},
			wantTaints: []corev1.Taint{notReadyTaint},
		},
		{
			name:       "untainted gated node, workload pod on another node: tainted",
			backfill:   true,
			objs:       []client.Object{testobj.Node(name, t0), testobj.Pod("web", "n2", t0, testobj.Namespace("default"), testobj.Labels(nil))},
			wantWrites: 1,
			wantTaints: []corev1.Taint{gateTaint},
			wantEvents: []string{"Normal " + ReasonBackfilled},
		},
		{
			name:       "untainted gated node without backfill: untouched",
			objs:       []client.Object{testobj.Node(name, t0)},
			wantTaints: nil,
		},
		{
			name: "excluded node holding the taint with a ready init pod: left alone",
			objs: []client.Object{testobj.Node(name, t0, testobj.Taints(notReadyTaint, gateTaint),
				testobj.NodeLabel("kubernetes.azure.com/mode", "system")), ready()},
			wantTaints: []corev1.Taint{notReadyTaint, gateTaint},
		},
		{
			name:       "untainted excluded node with backfill: untouched",
			backfill:   true,
			objs:       []client.Object{testobj.Node(name, t0, testobj.NodeLabel("kubernetes.azure.com/mode", "system"))},
			wantTaints: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testobj.ValidConfig(t, tc.cfg)
			e := newReconcilerEnv(t, cfg, tc.backfill, interceptor.Funcs{}, tc.objs...)
			got := e.reconcile(t, name)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Reconcile() result mismatch (-want +got):\n%s", diff)
			}
			if w := e.calls.writes(); w != tc.wantWrites {
				t.Errorf("Reconcile() performed %d writes, want %d", w, tc.wantWrites)
			}
			stored := getNode(t, e.c, name)
			if diff := cmp.Diff(tc.wantTaints, stored.Spec.Taints); diff != "" {
				t.Errorf("stored taints mismatch (-want +got):\n%s", diff)
			}
			if got := stored.Annotations[config.DefaultCompletedAnnotation]; got != tc.wantAnn {
				t.Errorf("completedAt = %q, want %q", got, tc.wantAnn)
			}
			if diff := cmp.Diff(tc.wantEvents, e.drain()); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}

			// A second reconcile of the same state is steady: no further write.
			before := e.calls.writes()
			e.reconcile(t, name)
			if w := e.calls.writes() - before; w != 0 {
				t.Errorf("second Reconcile() performed %d writes, want 0", w)
			}
		})
	}
}

func TestReconcileNodeGone(t *testing.T) {
	e := newReconcilerEnv(t, testobj.ValidConfig(t, nil), true, interceptor.Funcs{})
	if got := e.reconcile(t, "missing"); got != (reconcile.Result{}) {
		t.Errorf("Reconcile() = %+v, want empty result", got)
	}
	if w := e.calls.writes(); w != 0 {
		t.Errorf("Reconcile() performed %d writes, want 0", w)
	}
}

func TestReconcileKeepTimeoutWarnsOnce(t *testing.T) {
	cfg := testobj.ValidConfig(t, func(c *config.Config) {
		c.MaxHold = metav1.Duration{Duration: 5 * time.Minute}
		c.TimeoutPolicy = rule.TimeoutKeep
	})
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{},
		testobj.Node("n1", t0, testobj.Taints(gateTaint)), testobj.Pod("init-n1", "n1", t0.Add(time.Second)))
	before := counterValue(t, "startupgate_timeouts_total", "policy", "keep")

	for i := range 2 {
		if got := e.reconcile(t, "n1"); got != (reconcile.Result{}) {
			t.Errorf("Reconcile() #%d = %+v, want no requeue (the keep policy waits for an event)", i+1, got)
		}
		e.clock.Step(time.Minute)
	}
	want := []string{"Normal " + ReasonHeld, "Warning " + ReasonTimedOut}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events across two reconciles mismatch (-want +got):\n%s", diff)
	}
	if d := counterValue(t, "startupgate_timeouts_total", "policy", "keep") - before; d != 1 {
		t.Errorf("timeouts_total{policy=keep} grew by %v, want 1", d)
	}
	if w := e.calls.writes(); w != 0 {
		t.Errorf("keep policy performed %d writes, want 0", w)
	}
	if n := getNode(t, e.c, "n1"); !cfg.HasTaint(n) || cfg.Released(n) {
		t.Errorf("keep policy changed the node: %v %v", n.Spec.Taints, n.Annotations)
	}

	// The init pod becomes ready after all: the node is released normally.
	pod := &corev1.Pod{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "init-n1"}, pod); err != nil {
		t.Fatal(err)
	}
	testobj.ReadyAt(e.clock.Now())(pod)
	if err := e.c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "n1")
	if n := getNode(t, e.c, "n1"); cfg.HasTaint(n) || !cfg.Released(n) {
		t.Errorf("ready node after keep timeout not released: %v %v", n.Spec.Taints, n.Annotations)
	}
	if diff := cmp.Diff([]string{"Normal " + ReasonReleased}, e.drain()); diff != "" {
		t.Errorf("release events mismatch (-want +got):\n%s", diff)
	}
}

func TestReconcileReleaseKeepsForeignTaintOnConflict(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	first := true
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if first {
				first = false
				n := &corev1.Node{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), n); err != nil {
					return err
				}
				n.Spec.Taints = append(n.Spec.Taints, foreignTaint)
				if err := cl.Update(ctx, n); err != nil {
					return err
				}
			}
			// No injected error: the stale resourceVersion makes the fake apiserver refuse.
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}, testobj.Node("n1", t0, testobj.Taints(gateTaint)), testobj.Pod("init-n1", "n1", t0.Add(time.Second), testobj.ReadyAt(t0.Add(time.Minute))))
	e.reconcile(t, "n1")
	n := getNode(t, e.c, "n1")
	if diff := cmp.Diff([]corev1.Taint{foreignTaint}, n.Spec.Taints); diff != "" {
		t.Errorf("stored taints mismatch (-want +got):\n%s", diff)
	}
	if !cfg.Released(n) {
		t.Errorf("node not released")
	}
}

// TestReconcileBackfillUndone: a workload pod that lands between the idle check and the taint
// means the node is in service; backfill undoes itself and marks the node released.
func TestReconcileBackfillUndone(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	lists := 0
	e := newReconcilerEnv(t, cfg, true, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists++
			if lists == 2 {
				if err := cl.Create(ctx, testobj.Pod("web", "n1", t0, testobj.Namespace("default"), testobj.Labels(nil))); err != nil {
					return err
				}
			}
			return cl.List(ctx, list, opts...)
		},
	}, testobj.Node("n1", t0))
	e.reconcile(t, "n1")
	n := getNode(t, e.c, "n1")
	if cfg.HasTaint(n) {
		t.Errorf("backfill not undone: taints %v", n.Spec.Taints)
	}
	if got, want := n.Annotations[config.DefaultCompletedAnnotation], strconv.FormatInt(e.clock.Now().Unix(), 10); got != want {
		t.Errorf("completedAt = %q, want %q", got, want)
	}
	want := []string{"Normal " + ReasonBackfilled, "Warning " + ReasonBackfillUndone}
	if diff := cmp.Diff(want, e.drain()); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if e.calls.patches != 2 {
		t.Errorf("got %d patches, want 2 (taint, then undo)", e.calls.patches)
	}
	// Released: never backfilled again.
	before := e.calls.writes()
	e.reconcile(t, "n1")
	if w := e.calls.writes() - before; w != 0 {
		t.Errorf("reconcile after undo performed %d writes, want 0", w)
	}
}

// TestReconcileHeldOncePerNode: the Held event is emitted once per node object, again for a
// replacement node with the same name.
func TestReconcileHeldOncePerNode(t *testing.T) {
	cfg := testobj.ValidConfig(t, nil)
	e := newReconcilerEnv(t, cfg, false, interceptor.Funcs{}, testobj.Node("n1", t0, testobj.Taints(gateTaint)))
	e.reconcile(t, "n1")
	e.reconcile(t, "n1")
	if diff := cmp.Diff([]string{"Normal " + ReasonHeld}, e.drain()); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	old := getNode(t, e.c, "n1")
	if err := e.c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	repl := testobj.Node("n1", t0.Add(time.Minute), testobj.Taints(gateTaint))
	repl.UID = "replacement"
	if err := e.c.Create(context.Background(), repl); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "n1")
	if diff := cmp.Diff([]string{"Normal " + ReasonHeld}, e.drain()); diff != "" {
		t.Errorf("events for the replacement mismatch (-want +got):\n%s", diff)
	}
}

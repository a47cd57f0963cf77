package record

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The recorder watches Nodes and Pods and keeps, per node incarnation, what happened when.
//
// Ordering. Every event carries the resourceVersion of the write that produced it. On one
// etcd — every backend this simulator drives keeps Nodes and Pods in the same store — a
// resourceVersion is etcd's global modification revision: a write that happened later has a
// strictly larger one, whatever its resource type. So "was this Pod bound before that Node
// was released?" is answered by comparing the two writes' resourceVersions, not by when
// this process happened to receive the events (two informers deliver in any interleaving).
// Local receive times are kept only for latencies and the timeline picture.
//
// Informers, not raw watches: an informer re-lists after a dropped watch. A re-list can
// coalesce intermediate versions, which can only make a binding look later than it was
// (a missed early Pod), never earlier — the checker never invents a violation.
type Recorder struct {
	cfg       *config.Config
	ledger    *Ledger
	namespace string
	// init are the scenario's init DaemonSets: the simulator's ground truth of which
	// components each node must run, independent of what the gate believes.
	init []scenario.InitDaemonSet
	// continuous names the init DaemonSets that must stay ready after release.
	continuous map[string]bool

	mu    sync.Mutex
	nodes map[string]*NodeRecord // by UID
	// current maps a node name to the UIDs it has had, in order.
	byName map[string][]string
	pods   map[string]*podSeen // by pod UID
	// podRV and nodeRV are the newest resourceVersions each stream has delivered: the
	// barrier compares them with a write of its own.
	podRV, nodeRV atomic.Uint64
}

// NodeRV is the newest resourceVersion the node stream has delivered: every Node change up
// to it has been seen, so a Pod bound at or before it is early only if the node was not
// released before the binding. A live count must not call a binding early while the
// release that preceded it is still on its way.
func (r *Recorder) NodeRV() uint64 { return r.nodeRV.Load() }

// NodeRecord is one node incarnation (a re-registered name gets a new record).
type NodeRecord struct {
	Name string
	UID  string
	// Gated: the gate's node selector matches the node, so it must be held until released.
	Gated   bool
	Created Mark
	// CreatedAt is the Node's creationTimestamp, the moment the gate counts holds from.
	CreatedAt time.Time
	Tainted   Mark // first version seen with the gate taint (zero if never)
	InitReady Mark // first time every init Pod seen on it was Ready
	Released  Mark // first version seen with completedAt and without the taint
	// Held is the newest version seen before Released that was not released yet. The
	// release came after it, and at or before Released; see ResolveReleases.
	Held    Mark
	Deleted Mark
	// TaintedAtCreate: the first stored version already had the taint (admission worked).
	TaintedAtCreate bool
	// CompletedAt lists every change of a rule's completion annotation, as KEY=VALUE (an
	// empty value: removed). Each must be set once and never change.
	CompletedAt []string
	LostTaints  []string
	// DryRunWrites names the dry-run rules whose taint or completion appeared on the node.
	DryRunWrites []string
	// OutsideAtCreate and OutsideNow are the rule taints on the node that the rule's selector
	// does not match: in its first stored version, and in the latest one seen.
	OutsideAtCreate, OutsideNow []string
	// Unready are the windows, after the node's release, in which a continuous rule's
	// components were not all ready on it (To zero: still open). Retainted are the moments a
	// continuous rule's taint came back on the released node.
	Unready   []Window
	Retainted []Mark
	Bindings  []Binding
	// Components are the init DaemonSets that target this node.
	Components []string
	// ReadyAccepted are the moments the fake kubelet's writes making an init Pod ready
	// (status or early annotation) were accepted by the apiserver. Latency is measured from
	// these, not from when this process received the Pod event: under a burst the Pod watch
	// carries far more traffic than the Node watch and lags it.
	ReadyAccepted []time.Time
	// KubeletStopped is when the scenario stopped the node's fake kubelet (zero: never).
	KubeletStopped time.Time
	// Conditions are the node's condition statuses (Type=Status, sorted), each time they
	// change; Taints are its taints (key:Effect, sorted), each time they change.
	Conditions []Snapshot
	Taints     []Snapshot
	// Evictions are the Pods the taint-eviction controller evicted from the node.
	Evictions []Eviction

	inits     []*podSeen
	completed map[string]string // completion annotation -> last value seen
	// retainted: which continuous rules' taints the last version carried, after completion.
	retainted map[string]bool
}

// Window is a span between two writes.
type Window struct{ From, To Mark }

// Mark is a moment: the resourceVersion of the write and when this process saw it.
type Mark struct {
	RV   uint64
	Time time.Time
}

// IsZero reports whether the moment never happened.
func (m Mark) IsZero() bool { return m.Time.IsZero() }

// Binding is a Pod seen bound to a node.
type Binding struct {
	Pod       string // namespace/name
	Mark      Mark
	Tolerates bool // tolerates the gate taint (DaemonSet agents, init Pods)
	Init      bool
	// Stateful: a StatefulSet's Pod; Running is when it was first seen Running (zero: never).
	Stateful bool
	Running  Mark
}

// Snapshot is a set of a node's facts (conditions or taints) as of a moment.
type Snapshot struct {
	Mark  Mark
	Facts []string
}

// Eviction is a Pod the taint-eviction controller evicted.
type Eviction struct {
	Pod  string
	Mark Mark
}

type podSeen struct {
	node      *NodeRecord
	init      bool
	component string
	ready     bool
	wasReady  bool // ready at some point
	gone      bool
	binding   int // index in node.Bindings
	evicted   bool
}

// NewRecorder prepares a recorder for one scenario namespace.
func NewRecorder(cfg *config.Config, ledger *Ledger, namespace string, init []scenario.InitDaemonSet) *Recorder {
	return &Recorder{cfg: cfg, ledger: ledger, namespace: namespace, init: init, continuous: continuousComponents(init),
		nodes: map[string]*NodeRecord{}, byName: map[string][]string{}, pods: map[string]*podSeen{}}
}

// continuousComponents names the init DaemonSets that must stay ready after release.
func continuousComponents(init []scenario.InitDaemonSet) map[string]bool {
	out := map[string]bool{}
	for _, in := range init {
		if in.Continuous {
			out[in.Name] = true
		}
	}
	return out
}

// Run starts the informers (nodes with the scenario label, pods in the namespace) and
// returns once they have synced.
func (r *Recorder) Run(ctx context.Context, cs kubernetes.Interface, nodeSelector string) error {
	nodes := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = nodeSelector }))
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(r.namespace))
	ni := nodes.Core().V1().Nodes().Informer()
	pi := pods.Core().V1().Pods().Informer()
	_, err := ni.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.node(nil, o.(*corev1.Node)) },
		UpdateFunc: func(old, cur any) { r.node(old.(*corev1.Node), cur.(*corev1.Node)) },
		DeleteFunc: func(o any) { r.nodeDeleted(o) },
	})
	if err != nil {
		return err
	}
	if _, err = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.pod(o.(*corev1.Pod)) },
		UpdateFunc: func(_, cur any) { r.pod(cur.(*corev1.Pod)) },
		DeleteFunc: func(o any) { r.podDeleted(o) },
	}); err != nil {
		return err
	}
	nodes.Start(ctx.Done())
	pods.Start(ctx.Done())
	for _, synced := range []cache.InformerSynced{ni.HasSynced, pi.HasSynced} {
		if !cache.WaitForCacheSync(ctx.Done(), synced) {
			return fmt.Errorf("recorder informers did not sync")
		}
	}
	return nil
}

func rv(o metav1.Object) uint64 {
	n, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	return n
}

func (r *Recorder) node(old, cur *corev1.Node) {
	now := time.Now()
	m := Mark{RV: rv(cur), Time: now}
	maxStore(&r.nodeRV, m.RV)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.nodes[string(cur.UID)]
	if !ok {
		rec = &NodeRecord{Name: cur.Name, UID: string(cur.UID), Gated: r.cfg.Gated(cur), Created: m,
			CreatedAt: cur.CreationTimestamp.Time, Components: r.components(cur)}
		// The first version this process sees may be later than the CREATE (the recorder
		// starts before any node joins, so normally it is the CREATE itself).
		rec.TaintedAtCreate = r.cfg.HasTaint(cur)
		r.nodes[rec.UID] = rec
		r.byName[cur.Name] = append(r.byName[cur.Name], rec.UID)
	}
	if old != nil && !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		// Relabelled: the init DaemonSets that target the node may differ now.
		rec.Components = r.components(cur)
		if rec.InitReady.IsZero() && allReady(rec, r.continuous) {
			rec.InitReady = m
		}
	}
	if r.cfg.HasTaint(cur) && rec.Tainted.IsZero() {
		rec.Tainted = m
	}
	r.rules(rec, cur, m)
	rec.Conditions = appendChanged(rec.Conditions, conditionFacts(cur), m)
	rec.Taints = appendChanged(rec.Taints, taintFacts(cur), m)
	if rec.Released.IsZero() {
		if r.released(cur) {
			rec.Released = m
		} else {
			rec.Held = m
		}
	}
	if old != nil {
		for _, t := range lostTaints(old.Spec.Taints, cur.Spec.Taints) {
			if isForeign(t, r.cfg) && !r.ledger.Removed(cur.Name, t.Key) {
				rec.LostTaints = append(rec.LostTaints, fmt.Sprintf("%s at rv %d, written by %s", t.ToString(), m.RV, writers(old, cur)))
			}
		}
	}
}

// released: the node has its completion and not the gate's taint.
func (r *Recorder) released(n *corev1.Node) bool {
	return r.cfg.Released(n) && !r.cfg.HasTaint(n)
}

// ResolveReleases makes each released node's Released exact enough to judge its bindings.
// The node stream can miss versions (after a broken watch, a re-list hands over only the
// newest), so the first version seen released may be later than the release itself, and
// a workload Pod bound in between would look early: after an apiserver restart, a node released at
// 13 s was first seen released at 18 s, a status report later, and three Pods bound at
// 14 s were judged early. For each binding between Held and Released, it reads the node
// as it was at the binding's resourceVersion (a list at that exact revision, from etcd's
// history), and moves Released back to the first version read released. A binding is
// still judged only by what the API held at its resourceVersion.
func (r *Recorder) ResolveReleases(ctx context.Context, cs kubernetes.Interface) error {
	type open struct {
		uid, name      string
		held, released uint64
		bound          []uint64
	}
	var opens []open
	r.mu.Lock()
	for _, rec := range r.nodes {
		o := open{uid: rec.UID, name: rec.Name, held: rec.Held.RV, released: rec.Released.RV}
		for _, b := range rec.Bindings {
			// Only a binding that would be a violation is worth a read: each node's init
			// Pod is commonly bound between its last version held and its release.
			if !b.Tolerates && !b.Init && !rec.Released.IsZero() && b.Mark.RV > o.held && b.Mark.RV < o.released {
				o.bound = append(o.bound, b.Mark.RV)
			}
		}
		if len(o.bound) > 0 {
			opens = append(opens, o)
		}
	}
	r.mu.Unlock()
	for _, o := range opens {
		at := func(rv uint64) (bool, uint64, error) { return r.releasedAt(ctx, cs, o.name, o.uid, rv) }
		released, err := FirstReleased(o.held, o.released, o.bound, at)
		if err != nil {
			return fmt.Errorf("node %s: %w", o.name, err)
		}
		r.mu.Lock()
		r.nodes[o.uid].Released.RV = released
		r.mu.Unlock()
	}
	return nil
}

// FirstReleased narrows a release known to lie in (held, released] until no binding in
// bound falls inside it: it asks at(rv) whether the node was released at each one, in
// order, and returns the resourceVersion the release is at or before.
func FirstReleased(held, released uint64, bound []uint64, at func(rv uint64) (bool, uint64, error)) (uint64, error) {
	bound = slices.Sorted(slices.Values(bound))
	for _, b := range bound {
		if b <= held || b >= released {
			continue
		}
		ok, version, err := at(b)
		if err != nil {
			return released, err
		}
		if !ok {
			held = b
			continue
		}
		released = version
	}
	return released, nil
}

// releasedAt reads the node incarnation uid as it was at resourceVersion rv: whether it
// was released then, and the version it had.
func (r *Recorder) releasedAt(ctx context.Context, cs kubernetes.Interface, name, uid string, at uint64) (bool, uint64, error) {
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion:      strconv.FormatUint(at, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		return false, 0, fmt.Errorf("reading it at rv %d: %w", at, err)
	}
	if len(l.Items) != 1 || string(l.Items[0].UID) != uid {
		return false, 0, fmt.Errorf("at rv %d, found %d nodes of that name, not incarnation %s", at, len(l.Items), uid)
	}
	return r.released(&l.Items[0]), rv(&l.Items[0]), nil
}

// rules records, per rule, what this version shows: completion annotations that change
// after they were set, a dry-run rule's taint or completion (which must never be written),
// and a rule's taint on a node its selector does not match.
func (r *Recorder) rules(rec *NodeRecord, cur *corev1.Node, m Mark) {
	if rec.completed == nil {
		rec.completed = map[string]string{}
	}
	var outside []string
	for _, rl := range r.cfg.EffectiveRules() {
		v, set := cur.Annotations[rl.CompletedAnnotation] // v is "" when not set
		// A condition rule's annotation marks its taint and comes and goes with it; it is
		// not a completion.
		if last, seen := rec.completed[rl.CompletedAnnotation]; (set || seen) && rl.Mode != rule.Condition {
			if !seen || v != last {
				rec.CompletedAt = append(rec.CompletedAt, rl.CompletedAnnotation+"="+v)
			}
			rec.completed[rl.CompletedAnnotation] = v
		}
		if rl.Mode == rule.Continuous && !rl.DryRun {
			if rec.retainted == nil {
				rec.retainted = map[string]bool{}
			}
			again := set && rl.HasTaint(cur)
			if again && !rec.retainted[rl.Name] {
				rec.Retainted = append(rec.Retainted, m)
			}
			rec.retainted[rl.Name] = again
		}
		switch {
		case rl.DryRun && (rl.HasTaint(cur) || set) && !slices.Contains(rec.DryRunWrites, rl.Name):
			rec.DryRunWrites = append(rec.DryRunWrites, rl.Name)
		case !rl.DryRun && rl.HasTaint(cur) && !rl.Matches(cur):
			outside = append(outside, fmt.Sprintf("%s (rule %s) at rv %d", rl.Taint.Key, rl.Name, m.RV))
		}
	}
	if rec.Created.RV == m.RV {
		rec.OutsideAtCreate = outside
	}
	rec.OutsideNow = outside
}

func maxStore(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

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

// deletedObject is the object an informer's delete event carries, unwrapping the tombstone
// it hands over when its watch missed the deletion itself.
func deletedObject[T any](o any) (T, bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	t, ok := o.(T)
	return t, ok
}

func (r *Recorder) nodeDeleted(o any) {
	n, ok := deletedObject[*corev1.Node](o)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.nodes[string(n.UID)]; ok && rec.Deleted.IsZero() {
		rec.Deleted = Mark{RV: rv(n), Time: time.Now()}
	}
}

// lostTaints are the taints in old that cur no longer has.
func lostTaints(old, cur []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, o := range old {
		found := false
		for _, c := range cur {
			if c.Key == o.Key && c.Effect == o.Effect {
				found = true
				break
			}
		}
		if !found {
			out = append(out, o)
		}
	}
	return out
}

// isForeign: not a rule's taint, and not one the node lifecycle manages.
func isForeign(t corev1.Taint, cfg *config.Config) bool {
	for _, rl := range cfg.EffectiveRules() {
		if t.Key == rl.Taint.Key && t.Effect == rl.Taint.Effect {
			return false
		}
	}
	return !strings.HasPrefix(t.Key, "node.kubernetes.io/") &&
		!strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/")
}

func (r *Recorder) pod(p *corev1.Pod) {
	m := Mark{RV: rv(p), Time: time.Now()}
	maxStore(&r.podRV, m.RV)
	if p.Spec.NodeName == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.pods[string(p.UID)]
	if seen == nil {
		// A Pod belongs to the node incarnation it was first seen bound to: a stale init Pod
		// of a deleted node stays with that node and never counts for its successor.
		rec := r.incarnation(p.Spec.NodeName, m.RV)
		if rec == nil {
			return
		}
		comp := r.componentOf(p)
		seen = &podSeen{node: rec, init: comp != "", component: comp, binding: len(rec.Bindings)}
		r.pods[string(p.UID)] = seen
		rec.Bindings = append(rec.Bindings, Binding{
			Pod: p.Namespace + "/" + p.Name, Mark: m, Tolerates: r.cfg.Tolerates(p.Spec.Tolerations), Init: seen.init,
			Stateful: ownedBy(p, "StatefulSet"),
		})
		if seen.init {
			rec.inits = append(rec.inits, seen)
		}
	}
	r.podState(seen, p, m)
	if !seen.init {
		return
	}
	seen.ready = PodIsReady(p, r.cfg)
	seen.wasReady = seen.wasReady || seen.ready
	rec := seen.node
	if rec.InitReady.IsZero() && allReady(rec, r.continuous) {
		rec.InitReady = m
	}
	r.continuousWindow(rec, m)
}

// podState records when a Pod first runs, and its eviction by the taint-eviction
// controller (which marks the Pod with a DisruptionTarget condition before it deletes it).
func (r *Recorder) podState(seen *podSeen, p *corev1.Pod, m Mark) {
	b := &seen.node.Bindings[seen.binding]
	if b.Running.IsZero() && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		b.Running = m
	}
	if seen.evicted {
		return
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByTaintManager" {
			seen.evicted = true
			seen.node.Evictions = append(seen.node.Evictions, Eviction{Pod: b.Pod, Mark: m})
		}
	}
}

func ownedBy(p *corev1.Pod, kind string) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == kind
}

// appendChanged appends facts as of m unless they equal the last ones.
func appendChanged(list []Snapshot, facts []string, m Mark) []Snapshot {
	if n := len(list); n > 0 && slices.Equal(list[n-1].Facts, facts) {
		return list
	}
	return append(list, Snapshot{Mark: m, Facts: facts})
}

func conditionFacts(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	slices.Sort(out)
	return out
}

func taintFacts(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Spec.Taints))
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

// KubeletStopped notes that the scenario stopped the node's fake kubelet at at.
func (r *Recorder) KubeletStopped(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ids := r.byName[node]; len(ids) > 0 {
		r.nodes[ids[len(ids)-1]].KubeletStopped = at
	}
}

// podDeleted: a deleted init Pod no longer counts; while its DaemonSet targets the node,
// its component is unready until a new Pod is.
func (r *Recorder) podDeleted(o any) {
	p, ok := deletedObject[*corev1.Pod](o)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if seen := r.pods[string(p.UID)]; seen != nil && seen.init {
		seen.ready, seen.gone = false, true
		r.continuousWindow(seen.node, Mark{RV: rv(p), Time: time.Now()})
	}
}

// continuousWindow opens or closes the node's unready window: after its release, whether
// every continuous component that targets it has a ready Pod.
func (r *Recorder) continuousWindow(rec *NodeRecord, m Mark) {
	if rec.Released.IsZero() || len(r.continuous) == 0 {
		return
	}
	ready := true
	for _, comp := range rec.Components {
		if !r.continuous[comp] {
			continue
		}
		ok := false
		for _, p := range rec.inits {
			ok = ok || (p.component == comp && p.ready && !p.gone)
		}
		ready = ready && ok
	}
	open := len(rec.Unready) > 0 && rec.Unready[len(rec.Unready)-1].To.IsZero()
	switch {
	case !ready && !open:
		rec.Unready = append(rec.Unready, Window{From: m})
	case ready && open:
		rec.Unready[len(rec.Unready)-1].To = m
	}
}

// allReady: every component that targets the node has a ready Pod on it — or, for a
// continuous one, has had one. A continuous component that goes unready after that is its
// own rule's to taint again (judged by its unready windows), not a sign that the node's
// startup release came too early: under load, a startup rule's release can come after a
// continuous component, ready and released first, has already gone unready.
func allReady(rec *NodeRecord, continuous map[string]bool) bool {
	for _, comp := range rec.Components {
		ok := false
		for _, p := range rec.inits {
			ok = ok || (p.component == comp && (p.ready || continuous[comp] && p.wasReady))
		}
		if !ok {
			return false
		}
	}
	return len(rec.Components) > 0
}

// components lists the init DaemonSets whose nodeSelector matches the node.
func (r *Recorder) components(n *corev1.Node) []string {
	var out []string
	for _, in := range r.init {
		if labels.SelectorFromSet(in.NodeSelector).Matches(labels.Set(n.Labels)) {
			out = append(out, in.Name)
		}
	}
	return out
}

// componentOf names the init DaemonSet a Pod belongs to, or "".
func (r *Recorder) componentOf(p *corev1.Pod) string {
	for _, in := range r.init {
		if labels.SelectorFromSet(in.Labels).Matches(labels.Set(p.Labels)) {
			return in.Name
		}
	}
	return ""
}

// ReadyAccepted is the fake kubelet's report that the apiserver accepted a write making an
// init Pod on node ready.
func (r *Recorder) ReadyAccepted(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if uids := r.byName[node]; len(uids) > 0 {
		rec := r.nodes[uids[len(uids)-1]]
		rec.ReadyAccepted = append(rec.ReadyAccepted, at)
	}
}

// ReadyMoment is when the node became ready for release purposes: the last accepted ready
// write at or before the release, else the watch-observed InitReady.
func (rec *NodeRecord) ReadyMoment() time.Time {
	var best time.Time
	for _, t := range rec.ReadyAccepted {
		if !t.After(rec.Released.Time) && t.After(best) {
			best = t
		}
	}
	if best.IsZero() {
		return rec.InitReady.Time
	}
	return best
}

// incarnation is the record of the node that had this name when the write at rv happened:
// the latest one created at or before it.
func (r *Recorder) incarnation(name string, at uint64) *NodeRecord {
	uids := r.byName[name]
	for i := len(uids) - 1; i >= 0; i-- {
		if rec := r.nodes[uids[i]]; rec.Created.RV <= at || i == 0 {
			return rec
		}
	}
	return nil
}

// PodIsReady is the simulator's own reading of readiness (Ready condition or the early
// annotation) — deliberately not the gate's code, so that a gate bug cannot hide itself.
func PodIsReady(p *corev1.Pod, cfg *config.Config) bool {
	if p.Annotations[cfg.ReadyAnnotation] == "true" {
		return true
	}
	if cfg.AnnotationOnly {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Snapshot returns a deep copy of every record, sorted by creation.
func (r *Recorder) Snapshot() []NodeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]NodeRecord, 0, len(r.nodes))
	for _, rec := range r.nodes {
		c := *rec
		c.CompletedAt = append([]string(nil), rec.CompletedAt...)
		c.LostTaints = append([]string(nil), rec.LostTaints...)
		c.DryRunWrites = append([]string(nil), rec.DryRunWrites...)
		c.OutsideAtCreate = append([]string(nil), rec.OutsideAtCreate...)
		c.OutsideNow = append([]string(nil), rec.OutsideNow...)
		c.Unready = append([]Window(nil), rec.Unready...)
		c.Retainted = append([]Mark(nil), rec.Retainted...)
		c.retainted = nil
		c.completed = nil
		c.Bindings = append([]Binding(nil), rec.Bindings...)
		c.Components = append([]string(nil), rec.Components...)
		c.ReadyAccepted = append([]time.Time(nil), rec.ReadyAccepted...)
		c.Conditions = append([]Snapshot(nil), rec.Conditions...)
		c.Taints = append([]Snapshot(nil), rec.Taints...)
		c.Evictions = append([]Eviction(nil), rec.Evictions...)
		c.inits = nil
		out = append(out, c)
	}
	Sort(out)
	return out
}

// Ledger lists foreign taint removals that were intended (by the scenario's own taint
// writers), so that the checker can tell them from a taint the gate lost.
type Ledger struct {
	mu      sync.Mutex
	removed map[string]int
}

// Intend records that the simulator is about to remove key from node on purpose.
func (l *Ledger) Intend(node, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.removed == nil {
		l.removed = map[string]int{}
	}
	l.removed[node+"\x00"+key]++
}

// Removed reports whether a removal of key from node was intended, consuming it.
func (l *Ledger) Removed(node, key string) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := node + "\x00" + key
	if l.removed[k] > 0 {
		l.removed[k]--
		return true
	}
	return false
}

// writers names the field managers whose entries changed between two versions: who wrote
// the second one. It turns a lost-taint report into a suspect.
func writers(old, cur *corev1.Node) string {
	seen := map[string]string{}
	for _, e := range old.ManagedFields {
		seen[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = e.Time.String()
	}
	var out []string
	for _, e := range cur.ManagedFields {
		k := e.Manager + "/" + string(e.Operation) + "/" + e.Subresource
		if seen[k] != e.Time.String() {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return "unknown (same managedFields)"
	}
	return strings.Join(out, ",")
}

// Sort orders records by creation (etcd revision), then name.
func Sort(recs []NodeRecord) {
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Created.RV != recs[j].Created.RV {
			return recs[i].Created.RV < recs[j].Created.RV
		}
		return recs[i].Name < recs[j].Name
	})
}

// HasWorkload reports whether a Pod that does not tolerate the startup taint was ever
// bound to the node.
func (rec *NodeRecord) HasWorkload() bool {
	for _, b := range rec.Bindings {
		if b.Workload() {
			return true
		}
	}
	return false
}

// Workload: neither an init Pod nor a Pod tolerating the startup taint.
func (b Binding) Workload() bool { return !b.Tolerates && !b.Init }

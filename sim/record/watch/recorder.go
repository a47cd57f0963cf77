package watch

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Recorder watches Nodes and Pods and keeps, per node incarnation, what happened when.
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
	// cfg is the gate config the run is judged by: the scenario's, or, once a step has
	// edited the gate's rules, the one in force (SetConfig).
	cfg       atomic.Pointer[config.Config]
	ledger    *record.Ledger
	namespace string
	// init are the scenario's init DaemonSets: the simulator's ground truth of which
	// components each node must run, independent of what the gate believes.
	init []scenario.InitDaemonSet
	// continuous names the init DaemonSets that must stay ready after release.
	continuous map[string]bool

	mu    sync.Mutex
	nodes map[string]*nodeState // by UID
	// current maps a node name to the UIDs it has had, in order.
	byName map[string][]string
	pods   map[string]*podSeen // by pod UID
	// edited: a step edited the gate's rules; components then counts only the init
	// DaemonSets a rule in force requires.
	edited bool
	// suspensions are the stretches the run had a gate rule suspended.
	suspensions []record.Suspension
	// podRV and nodeRV are the newest resourceVersions each stream has delivered: the
	// barrier compares them with a write of its own.
	podRV, nodeRV atomic.Uint64
}

// nodeState is a node's record under construction, with the bookkeeping the recorder needs
// to keep it up to date; Snapshot hands out only the record.
type nodeState struct {
	*record.NodeRecord
	inits     []*podSeen
	completed map[string]string // completion annotation -> last value seen
	// retainted: which continuous rules' taints the last version carried, after completion.
	retainted map[string]bool
	boot      string // the last boot ID the node reported
	labels    map[string]string
}

// NodeRV is the newest resourceVersion the node stream has delivered: every Node change up
// to it has been seen, so a Pod bound at or before it is early only if the node was not
// released before the binding. A live count must not call a binding early while the
// release that preceded it is still on its way.
func (r *Recorder) NodeRV() uint64 { return r.nodeRV.Load() }

type podSeen struct {
	node      *nodeState
	init      bool
	component string
	ready     bool
	wasReady  bool // ready at some point
	gone      bool
	binding   int // index in node.Bindings
	evicted   bool
	states    []record.InitState // an init Pod's readiness, each time it changed
}

// NewRecorder prepares a recorder for one scenario namespace.
func NewRecorder(cfg *config.Config, ledger *record.Ledger, namespace string, init []scenario.InitDaemonSet) *Recorder {
	r := &Recorder{ledger: ledger, namespace: namespace, init: init, continuous: continuousComponents(init),
		nodes: map[string]*nodeState{}, byName: map[string][]string{}, pods: map[string]*podSeen{}}
	r.cfg.Store(cfg)
	return r
}

// SetConfig judges what the recorder sees from now on by cfg: the gate's rules as an edit
// left them. A node's components become the init DaemonSets that a rule of cfg requires
// there: a component whose rule was removed no longer holds the node, and a node whose
// remaining components are ready is ready from now on.
func (r *Recorder) SetConfig(cfg *config.Config) {
	r.cfg.Store(cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.edited = true
	now := record.Mark{RV: r.nodeRV.Load(), Time: time.Now()}
	for _, rec := range r.nodes {
		rec.Components = r.components(rec.labels)
		if rec.InitReady.IsZero() && allReady(rec, r.continuous) {
			rec.InitReady = now
		}
	}
}

// config is the gate config the run is judged by now.
func (r *Recorder) config() *config.Config { return r.cfg.Load() }

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

// deletedObject is the object an informer's delete event carries, unwrapping the tombstone
// it hands over when its watch missed the deletion itself.
func deletedObject[T any](o any) (T, bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	t, ok := o.(T)
	return t, ok
}

// KubeletStopped notes that the scenario stopped the node's fake kubelet at at.
func (r *Recorder) KubeletStopped(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ids := r.byName[node]; len(ids) > 0 {
		r.nodes[ids[len(ids)-1]].KubeletStopped = at
	}
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

// Snapshot returns a deep copy of every record, sorted by creation.
func (r *Recorder) Snapshot() []record.NodeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]record.NodeRecord, 0, len(r.nodes))
	for _, rec := range r.nodes {
		c := *rec.NodeRecord
		c.CompletedAt = append([]string(nil), rec.CompletedAt...)
		c.LostTaints = append([]string(nil), rec.LostTaints...)
		c.DryRunWrites = append([]string(nil), rec.DryRunWrites...)
		c.OutsideAtCreate = append([]string(nil), rec.OutsideAtCreate...)
		c.OutsideNow = append([]string(nil), rec.OutsideNow...)
		c.Unready = append([]record.Window(nil), rec.Unready...)
		c.Retainted = append([]record.Mark(nil), rec.Retainted...)
		c.Bindings = append([]record.Binding(nil), rec.Bindings...)
		c.Components = append([]string(nil), rec.Components...)
		c.ReadyAccepted = append([]time.Time(nil), rec.ReadyAccepted...)
		c.Conditions = append([]record.Snapshot(nil), rec.Conditions...)
		c.Taints = append([]record.Snapshot(nil), rec.Taints...)
		c.Evictions = append([]record.Eviction(nil), rec.Evictions...)
		c.Reboots = append([]record.Reboot(nil), rec.Reboots...)
		for i := range c.Reboots {
			c.Reboots[i].Reinit = reinit(rec, c.Reboots[i].Seen)
		}
		out = append(out, c)
	}
	record.Sort(out)
	return out
}

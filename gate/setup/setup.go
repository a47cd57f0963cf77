package setup

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// DefaultWorkers is how many nodes the release controller reconciles at once by default.
//
// A release is one Node write, and a reconcile that writes holds its worker for the whole
// round trip, so with few workers a burst of releases queues behind them; the figures that
// chose 64 are in docs/performance.md.
const DefaultWorkers = 64

// DefaultCacheSyncTimeout is how long each controller waits for its informers' initial
// lists before the gate gives up and exits (controller-runtime's default is 2 minutes).
// On a cluster of tens of thousands of nodes the lists can take longer than that
// (docs/operations.md), and a gate that exits lists them all again when it restarts.
const DefaultCacheSyncTimeout = 10 * time.Minute

// Options are the operational knobs that are not part of the contract.
type Options struct {
	// Workers is the number of nodes reconciled at once (default DefaultWorkers).
	Workers int
	// Clock defaults to the real clock; tests inject a fake one.
	Clock clock.PassiveClock
	// ColdStandby keeps a replica that is not the leader from watching Nodes and DaemonSets
	// until it leads (every replica's cache watches the init Pods, for their index by node).
	// By default a standby keeps its cache warm, so that a failover does not wait for a list
	// of the whole cluster; a cold standby saves that memory (as much as the leader's cache)
	// and the apiserver its watches.
	ColdStandby bool
	// CacheSyncTimeout bounds the wait for the initial lists (default DefaultCacheSyncTimeout).
	CacheSyncTimeout time.Duration
	// NodeLabels are the label keys the cache keeps on each Node besides those the rules
	// read (nil: DefaultNodeLabels; gate.AllLabels keeps every label).
	NodeLabels []string
	// PodGuardTimeout is the Pod guard webhook's timeoutSeconds (gate.PodGuard.Timeout).
	PodGuardTimeout time.Duration
	// PodGuardQPS and PodGuardBurst are the rate limit of the Pod guard's own client
	// (gate.GuardReader). Zero: the defaults.
	PodGuardQPS   float32
	PodGuardBurst int
	// Self is where this replica runs (the downward API's NODE_NAME, POD_NAME and
	// POD_NAMESPACE), for gate.Placement's report; empty fields are not known.
	Self Self
}

// Self is a replica's node and Pod.
type Self struct{ Node, Pod, Namespace string }

// PlacementEvery is how often each replica checks where it runs (gate.Placement), and
// OldestHeldEvery how often the leader publishes its oldest hold (gate.OldestHeld).
const (
	PlacementEvery  = time.Minute
	OldestHeldEvery = 15 * time.Second
)

// The Pod guard's client limits by default. An ordinary binding costs the guard no read;
// a binding to a node in a reboot or continuous rule's reach costs one or two, and a
// scheduler binds a few hundred Pods a second at most (docs/concepts.md#the-pod-guard).
// PodGuardInFlight bounds its reads at once, so that a burst waits in the guard rather
// than in the apiserver's queue, which the guard shares with the controller's requests.
const (
	DefaultPodGuardQPS   = 500
	DefaultPodGuardBurst = 1000
	PodGuardInFlight     = 64
)

// Filled are the objects whose informers a replica fills before it leads, or at once
// without leader election: the init Pods, which every replica's cache indexes by node, and
// unless it is a cold standby the Nodes and DaemonSets its controllers warm up.
func (o Options) Filled(leaderElection bool) []client.Object {
	objs := []client.Object{&corev1.Pod{}}
	if !o.ColdStandby || !leaderElection {
		objs = append(objs, &corev1.Node{}, &appsv1.DaemonSet{})
	}
	return objs
}

// DefaultNodeLabels are the label keys kept on cached Nodes by default besides those the
// rules read: the ones DaemonSets most often select nodes by, so that matching the
// required DaemonSets against a node (rule.ExpectedOn) rarely needs the apiserver.
var DefaultNodeLabels = []string{corev1.LabelOSStable, corev1.LabelArchStable}

// cachedLabels are the label keys the cache keeps on each Node.
func (o Options) cachedLabels(cfg *config.Config) gate.CachedLabels {
	extra := o.NodeLabels
	if extra == nil {
		extra = DefaultNodeLabels
	}
	return gate.NewCachedLabels(cfg, extra)
}

// CacheOptions restricts the manager's cache to what the gate reads: all Nodes, the
// DaemonSets (to check tolerations), and only the Pods of required components, those of
// the config's first Pod scope (config.PodScopes: a label selector, and a namespace when
// the components share one; AddToManager gives every further scope a cache of its own).
// The gate never lists or watches every Pod in the cluster. Transforms drop the fields
// nothing reads, so a large cluster costs little memory; a Node keeps only the labels opts
// names (Options.NodeLabels).
func CacheOptions(cfg *config.Config, opts Options) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  podScope(cfg, cfg.PodScopes()[0]),
			&corev1.Node{}: {Transform: nodeTrim(cfg, opts.cachedLabels(cfg))},
		},
	}
}

// podScope is the cache's selection of the Pods of one scope, trimmed.
func podScope(cfg *config.Config, sc rule.PodScope) cache.ByObject {
	by := cache.ByObject{Label: sc.Selector, Transform: podTrim(cfg)}
	if sc.Namespace != "" {
		by.Namespaces = map[string]cache.Config{sc.Namespace: {}}
	}
	return by
}

// scopeCache is the cache of one further Pod scope. As a runnable with a cache, the
// manager starts it with its own, on every replica, and waits for it to sync.
type scopeCache struct{ cache.Cache }

// GetCache is what puts the cache in the manager's group of caches.
func (s scopeCache) GetCache() cache.Cache { return s.Cache }

// podCaches gives each Pod scope past the first a cache of its own, its Pods indexed by
// node, and the sources that enqueue a node when one of its Pods changes.
func podCaches(ctx context.Context, mgr manager.Manager, cfg *config.Config) (gate.PodCaches, []source.Source, error) {
	var (
		caches  gate.PodCaches
		sources []source.Source
	)
	for _, sc := range cfg.PodScopes()[1:] {
		c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			ReaderFailOnMissingInformer: true, ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: podScope(cfg, sc)}})
		if err != nil {
			return nil, nil, fmt.Errorf("building the Pod cache of %s in namespace %q: %w", sc.Selector, sc.Namespace, err)
		}
		if err := indexByNode(ctx, c); err != nil {
			return nil, nil, err
		}
		if err := mgr.Add(scopeCache{c}); err != nil {
			return nil, nil, fmt.Errorf("adding the Pod cache of %s: %w", sc.Selector, err)
		}
		caches = append(caches, c)
		sources = append(sources, source.Kind[client.Object](c, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToNode)))
	}
	return caches, sources, nil
}

// indexByNode indexes a cache's Pods by the node they are bound to.
func indexByNode(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &corev1.Pod{}, gate.PodNodeNameField, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	return nil
}

// AddToManager wires the gate into mgr: the release controller, the toleration check, backfill and
// the webhooks, as cfg asks. mgr must have been built with CacheOptions(cfg, opts). cmd/gate and
// the simulator both call this function, so the simulator always tests the shipped wiring.
func AddToManager(ctx context.Context, mgr manager.Manager, cfg *config.Config, opts Options) error {
	if !cfg.Validated() {
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.CacheSyncTimeout <= 0 {
		opts.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if err := indexByNode(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	pods, sources, err := podCaches(ctx, mgr, cfg)
	if err != nil {
		return err
	}

	gate.RecordRules(cfg)
	recorder := mgr.GetEventRecorder("startupgate")
	writer := &gate.NodeWriter{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}
	r := &gate.Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Writer: writer, Recorder: recorder, Clock: opts.Clock, Config: cfg,
		Labels: opts.cachedLabels(cfg), Pods: pods}
	if cfg.Backfill {
		r.Backfill = &gate.Backfiller{Writer: writer, Reader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock, Config: cfg}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("startupgate").
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return r.NodeChanged(e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node))
			},
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToNode))
	for _, src := range sources {
		b = b.WatchesRawSource(src)
	}
	err = b.WithOptions(controllerOptions(opts.Workers, !opts.ColdStandby, opts.CacheSyncTimeout)).Complete(r)
	if err != nil {
		return fmt.Errorf("building node controller: %w", err)
	}

	err = ctrl.NewControllerManagedBy(mgr).
		Named("startupgate-tolerations").
		For(&appsv1.DaemonSet{}).
		WithOptions(controllerOptions(1, !opts.ColdStandby, opts.CacheSyncTimeout)).
		Complete(&gate.TolerationChecker{Client: mgr.GetClient(), Recorder: recorder, Config: cfg})
	if err != nil {
		return fmt.Errorf("building toleration checker: %w", err)
	}

	if err := mgr.Add(&gate.OldestHeld{R: r, Every: OldestHeldEvery}); err != nil {
		return fmt.Errorf("adding the oldest hold's gauge: %w", err)
	}
	if err := mgr.Add(&gate.Placement{API: mgr.GetAPIReader(), Recorder: recorder, Config: cfg,
		Node: opts.Self.Node, Pod: opts.Self.Pod, Namespace: opts.Self.Namespace, Every: PlacementEvery}); err != nil {
		return fmt.Errorf("adding the placement check: %w", err)
	}

	if cfg.Webhook || cfg.PodGuard {
		srv := mgr.GetWebhookServer()
		if cfg.Webhook {
			srv.Register(gate.NodeWebhookPath, gate.NewNodeWebhook(mgr.GetScheme(), cfg))
		}
		if cfg.PodGuard {
			api, err := gate.GuardReader(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
				cmp.Or(opts.PodGuardQPS, DefaultPodGuardQPS), cmp.Or(opts.PodGuardBurst, DefaultPodGuardBurst), PodGuardInFlight)
			if err != nil {
				return err
			}
			srv.Register(gate.PodGuardPath, &admission.Webhook{Handler: &gate.PodGuard{Cache: mgr.GetClient(), API: api, Config: cfg, Pods: pods,
				Labels: opts.cachedLabels(cfg), Timeout: opts.PodGuardTimeout}})
		}
		if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
			return fmt.Errorf("adding webhook readiness check: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	return nil
}

func podToNode(_ context.Context, o client.Object) []ctrl.Request {
	name := o.(*corev1.Pod).Spec.NodeName
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: name}}}
}

// podTrim keeps of an init Pod what Decide and the index read: identity, the labels the
// components' selectors read, the early-ready annotation, times, node and readiness (the
// Ready condition, each container's ready, and for a rule that gates reboots each
// container's ID and restart count). Nothing reads a cached Pod's other labels and
// annotations, tolerations, owners or other conditions: the checks that need a Pod's
// tolerations read it from the API. The init Pods of a DaemonSet then carry the same
// labels and annotations, and the cached Pods share their maps; a Pod's other annotations
// (a CNI's, with the Pod's own address) would make each map unlike the others.
func podTrim(cfg *config.Config) func(any) (any, error) {
	strs := newInterner()
	keepLabel := sets.New(cfg.PodLabelKeys()...).Has
	ready := cfg.Readiness().Annotation
	keepAnnotation := func(k string) bool { return k == ready }
	// A rule that gates reboots fingerprints a Pod's containers (rule.Fingerprint): their
	// IDs and restart counts are kept then, and only then.
	evidence := false
	for _, rl := range cfg.EffectiveRules() {
		evidence = evidence || rl.GatesReboots()
	}
	return func(o any) (any, error) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return o, nil
		}
		// A Pod is ready to Decide only with a ready status for each of its containers.
		// The trimmed Pod says the same with its statuses alone, one not ready for each
		// container that has none yet, and keeps no containers: each is a 408-byte
		// corev1.Container that nothing else reads.
		statuses := make([]corev1.ContainerStatus, max(len(p.Spec.Containers), len(p.Status.ContainerStatuses)))
		for i, s := range p.Status.ContainerStatuses {
			statuses[i] = corev1.ContainerStatus{Name: s.Name, Ready: s.Ready}
			if evidence {
				statuses[i].ContainerID, statuses[i].RestartCount = s.ContainerID, s.RestartCount
			}
		}
		var conds []corev1.PodCondition
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				conds = append(conds, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
			}
		}
		meta := trimMeta(p.ObjectMeta)
		meta.OwnerReferences, meta.GenerateName = nil, ""
		meta.Labels, meta.Annotations = strs.shared(p.Labels, keepLabel), strs.shared(p.Annotations, keepAnnotation)
		return &corev1.Pod{
			TypeMeta:   p.TypeMeta,
			ObjectMeta: meta,
			Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
			Status:     corev1.PodStatus{Phase: p.Status.Phase, Conditions: conds, ContainerStatuses: statuses},
		}, nil
	}
}

// nodeTrim keeps of a Node what the gate reads: its metadata with only the labels keep
// keeps (those the rules read, and those the required DaemonSets are expected to select
// nodes by) and the annotations of the rules (the completion annotation, and the boot and
// re-gate ones that extend its key, and the marks of the taints it placed), its taints, the node conditions a rule reads (type,
// status and transition time), and its boot ID. A cloud node's other labels, images,
// addresses, capacity, other conditions, heartbeats and other controllers' annotations are
// most of its size and nothing the gate reads; in a cache of every Node they would be most
// of the gate's heap. Writes are merge patches computed between two copies of the trimmed
// object, so the dropped fields are never written.
func nodeTrim(cfg *config.Config, keep gate.CachedLabels) func(any) (any, error) {
	var prefixes []string
	conditions := map[corev1.NodeConditionType]bool{}
	for _, rl := range cfg.EffectiveRules() {
		prefixes = append(prefixes, rl.CompletedAnnotation)
		if rl.LegacyCompleted != "" {
			// An earlier release's record, which the controller moves to the rule's.
			prefixes = append(prefixes, rl.LegacyCompleted)
		}
		for _, t := range rl.ConditionTypes() {
			conditions[t] = true
		}
	}
	if cfg.CompletedAnnotation != "" {
		prefixes = append(prefixes, cfg.CompletedAnnotation)
	}
	// The marks of the taints the gate placed, every rule's, a rule gone among them: by them
	// a node that left a rule's selector loses the rule's taint, and an orphan is lifted.
	prefixes = append(prefixes, cfg.PlacedAnnotation+".")
	labels := newInterner()
	return func(o any) (any, error) {
		n, ok := o.(*corev1.Node)
		if !ok {
			return o, nil
		}
		meta := trimMeta(n.ObjectMeta)
		if keep == nil {
			// Every label: a node's own (its hostname) make the maps unlike any other's.
			meta.Labels = labels.set(n.Labels)
		} else {
			meta.Labels = labels.shared(n.Labels, keep.Keeps)
		}
		meta.Annotations = nil
		for k, v := range n.Annotations {
			if hasAnyPrefix(k, prefixes) {
				if meta.Annotations == nil {
					meta.Annotations = map[string]string{}
				}
				meta.Annotations[k] = v
			}
		}
		var conds []corev1.NodeCondition
		for _, c := range n.Status.Conditions {
			if conditions[c.Type] {
				conds = append(conds, corev1.NodeCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
			}
		}
		return &corev1.Node{
			TypeMeta:   n.TypeMeta,
			ObjectMeta: meta,
			Spec:       corev1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable},
			// The boot ID tells a reboot, which a rule with onReboot: gate holds the node for.
			Status: corev1.NodeStatus{Conditions: conds, NodeInfo: corev1.NodeSystemInfo{BootID: n.Status.NodeInfo.BootID}},
		}, nil
	}
}

// interner shares the strings and maps of the cached objects' labels and annotations.
// Every node carries the same few dozen label keys, most values (zone, instance type,
// pool, architecture) are shared by many nodes, and the init Pods of a DaemonSet carry the
// same labels and annotations, but each decoded object holds copies of its own; in a cache
// of every Node they add up to a good part of the gate's heap. The tables stop growing at
// maxInterned entries, so that unique values (host names) of objects long deleted cannot
// grow them without bound; past it, a string or map is kept as it came.
//
// A shared map is shared by every cached object that has the same entries: nothing may
// write to a cached object's maps (the cache's readers get deep copies).
type interner struct {
	mu   sync.Mutex
	m    map[string]string
	maps map[string]map[string]string
}

// maxInterned bounds each of the interner's tables.
const maxInterned = 1 << 14

func newInterner() *interner {
	return &interner{m: map[string]string{}, maps: map[string]map[string]string{}}
}

// set returns a copy of m whose keys and values are the interned strings.
func (in *interner) set(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, v := range m {
		out[in.get(k)] = in.get(v)
	}
	return out
}

// shared returns the entries of m whose keys keep accepts (every entry, if keep is nil),
// in a map shared with the objects that have the same entries; nil if there are none.
func (in *interner) shared(m map[string]string, keep func(string) bool) map[string]string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	id := mapID(keys, m)
	in.mu.Lock()
	defer in.mu.Unlock()
	if out, ok := in.maps[id]; ok {
		return out
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[in.get(k)] = in.get(m[k])
	}
	if len(in.maps) < maxInterned {
		in.maps[id] = out
	}
	return out
}

// mapID names the entries of m under the sorted keys: each string with its length before
// it, so that no two sets of entries have the same name.
func mapID(keys []string, m map[string]string) string {
	var b strings.Builder
	for _, k := range keys {
		for _, s := range [2]string{k, m[k]} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	return b.String()
}

func (in *interner) get(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = nil
	return m
}

// ManagerOptions are the manager knobs cmd/gate and the simulator set. Scheme and Cache are
// the gate's own and always overridden.
type ManagerOptions = manager.Options

// NewManager validates cfg, builds a controller-runtime manager with the gate's cache and
// scheme, and calls AddToManager on it. This is the whole of the gate's wiring, shared by cmd/gate
// and the simulator.
func NewManager(rc *rest.Config, cfg *config.Config, mo ManagerOptions, opts Options) (manager.Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mo.Scheme = gate.Scheme()
	mo.Cache = CacheOptions(cfg, opts)
	mgr, err := ctrl.NewManager(withReadAhead(rc), mo)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := AddToManager(context.Background(), mgr, cfg, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}

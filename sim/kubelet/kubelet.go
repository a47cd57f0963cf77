package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/startupgate/startupgate/internal/retrylast"
	"github.com/startupgate/startupgate/sim/scenario"
)

const (
	// LeaseNamespace holds the nodes' heartbeat Leases.
	LeaseNamespace = "kube-node-lease"
	// A real kubelet renews every 10s a Lease of 40s. Five thousand of them are 500 writes a
	// second, which alone saturate the 2-core embedded apiserver: renewals then fall behind,
	// the node-lifecycle controller marks nodes unreachable, and its writes make it worse
	// (measured in a 5000-node burst: 3175 of 5000 nodes Unknown). The fake kubelet renews
	// every 30s a Lease of 120s instead, and the embedded controller-manager waits 3m
	// (--node-monitor-grace-period) before it calls a node unreachable.
	leaseDuration = 120 * time.Second
	leaseRenew    = 30 * time.Second
)

// Kubelet fakes the kubelets of a scenario's nodes, in the spirit of KWOK: it registers each
// Node with a real CREATE (so admission — the gate's webhook or policy — runs), reports it
// Ready, renews its Lease, and drives the status of Pods bound to its nodes. Init Pods follow
// their PodTimeline; everything else goes Running and Ready at once.
//
// It watches Pods through an informer, so a dropped watch re-lists instead of losing events.
// Delays are drawn from a source seeded by (seed, node, DaemonSet): the same seed gives the
// same schedule whatever order events arrive in.
type Kubelet struct {
	Client    kubernetes.Interface
	Namespace string
	Scenario  string
	Seed      uint64
	Init      []scenario.InitDaemonSet
	// Version is the kubelet version the nodes report: the plane's, as real nodes would.
	Version string
	// Errors receives failures of asynchronous work (status writes); the runner reports them.
	Errors func(error)
	// ReadyAccepted, if set, hears when a write making an init Pod ready was accepted.
	ReadyAccepted func(node string, at time.Time)
	// LeaseRenew is how often each node's Lease is renewed (default 30s); a plane with a
	// shorter node-monitor grace period needs a shorter one.
	LeaseRenew time.Duration
	// StatusReport is how often each Ready node reports its status though nothing changed,
	// as a kubelet's nodeStatusReportFrequency (5m by default there). 0: never, after the
	// first report. The report is what makes the node-lifecycle controller look at a Node
	// again: a taint change of its that failed (the apiserver restarted under it) is not
	// retried until the Node is next updated.
	StatusReport time.Duration
	// Adopt, if set, selects Nodes this kubelet did not register but plays the kubelet of
	// all the same (an autoscaler's, such as Karpenter's KWOK nodes: KWOKNodeLabel). Nil:
	// only the nodes it registers.
	Adopt labels.Selector
	// Profile, if set, gives the Nodes it registers the size and shape of a cloud node's
	// (labels, annotations, images, addresses, capacity); nil: the small default.
	Profile *NodeProfile

	mu      sync.Mutex
	nodes   map[string]struct{}              // names of registered nodes
	readied map[string]bool                  // registered nodes reported Ready
	leases  map[string]*coordinationv1.Lease // the Lease each node last wrote
	writers chan struct{}                    // bounds concurrent Pod writes
	written map[types.UID]*corev1.Pod        // the Pod as this kubelet last wrote it
	handled map[string]bool                  // pod UID -> driven
	boots   map[string]int                   // node -> reboots so far
	doomed  map[string]map[string]bool       // init DaemonSet -> nodes its Pods never warm on (NeverOnFirst)
	ctx     context.Context
}

// NoReadyReport is a readyAfter for Register: the node gets no later Ready report.
// A pending report holds the whole created Node until it fires: a far-off one, for each of
// the large benchmark's tens of thousands of static nodes, held most of this process's
// memory.
const NoReadyReport time.Duration = -1

// Start runs the Pod informer and the Lease heartbeat until ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	k.ctx = ctx
	k.nodes, k.handled, k.leases = map[string]struct{}{}, map[string]bool{}, map[string]*coordinationv1.Lease{}
	k.readied, k.boots = map[string]bool{}, map[string]int{}
	k.writers = make(chan struct{}, kubeletWriters)
	k.written = map[types.UID]*corev1.Pod{}
	// Nothing here reads a Pod's managed fields, and an update without them keeps the
	// stored ones; dropped, they do not grow this process with every Pod it drives (the
	// large benchmark's kubelet drives tens of thousands).
	f := informers.NewSharedInformerFactoryWithOptions(k.Client, 0, informers.WithNamespace(k.Namespace),
		informers.WithTransform(ctrlcache.TransformStripManagedFields()))
	pi := f.Core().V1().Pods().Informer()
	if _, err := pi.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.pod(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.pod(o.(*corev1.Pod)) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pi.HasSynced) {
		return fmt.Errorf("kubelet pod informer did not sync")
	}
	if err := k.startAdopting(ctx); err != nil {
		return err
	}
	go k.heartbeat(ctx)
	if k.StatusReport > 0 {
		go k.everyNode(ctx, k.StatusReport, k.readyNodes, k.reportStatus)
	}
	return nil
}

func (k *Kubelet) fail(err error) {
	if err != nil && k.ctx.Err() == nil && k.Errors != nil {
		k.Errors(err)
	}
}

// Register creates the Node (admission runs here), its Lease, and after readyAfter reports
// it Ready; with NoReadyReport it never does (a profile's Ready node has said so in its
// first status). It returns the CREATE's error: with a webhook that fails closed and is
// down, registration fails, as it would for a real kubelet.
func (k *Kubelet) Register(ctx context.Context, name string, extraLabels map[string]string, taints []corev1.Taint, readyAfter time.Duration) error {
	lbls := map[string]string{scenario.Label: k.Scenario, corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}
	for key, v := range extraLabels {
		lbls[key] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
	if k.Profile != nil {
		node.Status.NodeInfo.KubeletVersion = k.Version
		k.Profile.Apply(node)
	}
	// Claim the name before the CREATE: a DaemonSet Pod can be bound, and its event
	// delivered, before Create returns.
	k.mu.Lock()
	k.nodes[name] = struct{}{}
	k.mu.Unlock()
	created, err := k.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = k.adopt(ctx, name, err)
	}
	if err != nil {
		k.Deregister(name)
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	if err := k.renewLease(ctx, created); err != nil {
		return err
	}
	if readyAfter != NoReadyReport {
		time.AfterFunc(readyAfter, func() { k.fail(k.reportReady(created)) })
	}
	return nil
}

// adopt takes over a node of this scenario that already exists, as a real kubelet does
// when its registration answers AlreadyExists: an earlier CREATE was committed and its
// answer lost (the apiserver restarted under it), and the retry finds the node.
func (k *Kubelet) adopt(ctx context.Context, name string, exists error) (*corev1.Node, error) {
	n, err := k.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if n.Labels[scenario.Label] != k.Scenario {
		return nil, exists
	}
	return n, nil
}

// Deregister forgets a node (before its deletion, or to stop its kubelet: the node then
// goes NotReady as a dead one would), so its Lease is no longer renewed and its Pods are no
// longer driven.
func (k *Kubelet) Deregister(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.nodes, name)
	delete(k.leases, name)
	delete(k.readied, name)
}

func (k *Kubelet) reportReady(node *corev1.Node) error {
	if k.ctx.Err() != nil {
		return nil //nolint:nilerr // a kubelet that is stopping has nothing left to report, and that is no failure
	}
	now := metav1.Now()
	// The first attempt writes over the Node as created; a conflict re-reads it.
	first := node.DeepCopy()
	return Retry(k.ctx, func() error {
		n := first
		first = nil
		if n == nil {
			var err error
			n, err = k.Client.CoreV1().Nodes().Get(k.ctx, node.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && n.UID != node.UID) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		// A node created with a capacity (an adopted one: its instance type's) keeps it.
		if len(n.Status.Capacity) == 0 {
			capacity := corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("32Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			}
			n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		}
		n.Status.Phase = corev1.NodeRunning
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
		}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: k.Version, OperatingSystem: "linux", Architecture: "amd64",
			BootID: k.bootID(node.Name)}
		_, err := k.Client.CoreV1().Nodes().UpdateStatus(k.ctx, n, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted between the read and the write (a scenario's reregister or
			// nodeDelete): there is no node left to report for, as after a NotFound read.
			return nil
		}
		if err == nil {
			k.mu.Lock()
			if _, ok := k.nodes[node.Name]; ok {
				k.readied[node.Name] = true
			}
			k.mu.Unlock()
		}
		return err
	})
}

// reportStatus is a Ready node's periodic status report: its Ready condition's heartbeat,
// moved to now. A failed report is left to the next one, as a kubelet would.
func (k *Kubelet) reportStatus(ctx context.Context, name string) {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"lastHeartbeatTime":%q}]}}`,
		corev1.NodeReady, time.Now().UTC().Format(time.RFC3339))
	_, _ = k.Client.CoreV1().Nodes().PatchStatus(ctx, name, []byte(patch))
}

func (k *Kubelet) readyNodes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Collect(maps.Keys(k.readied))
}

func (k *Kubelet) registered() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Collect(maps.Keys(k.nodes))
}

// renewLease creates or renews the node's Lease. A renewal writes over the Lease this
// kubelet last wrote (one request, as a real kubelet does). Without that copy — a new node,
// or a failed write — it creates the Lease, and reads it only if it already exists.
func (k *Kubelet) renewLease(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewMicroTime(time.Now())
	leases := k.Client.CoordinationV1().Leases(LeaseNamespace)
	k.mu.Lock()
	l := k.leases[node.Name]
	k.mu.Unlock()
	if l == nil {
		created, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: map[string]string{scenario.Label: k.Scenario}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())), RenewTime: &now},
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			k.remember(node.Name, created, err)
			return err
		}
		if l, err = leases.Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading lease of node %s: %w", node.Name, err)
		}
	}
	l = l.DeepCopy()
	l.Spec.RenewTime = &now
	l, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	k.remember(node.Name, l, err)
	return err
}

// remember keeps the Lease just written, or forgets it after a failed write.
func (k *Kubelet) remember(name string, l *coordinationv1.Lease, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		delete(k.leases, name)
		return
	}
	k.leases[name] = l
}

// Retry retries f like a kubelet keeps retrying its API calls: on conflicts and on
// transport errors (an apiserver restarting), for up to a minute or until ctx ends.
func Retry(ctx context.Context, f func() error) error {
	backoff := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: 40, Cap: 2 * time.Second}
	return retrylast.OnError(backoff, func(err error) bool {
		return ctx.Err() == nil && retriable(err)
	}, f)
}

// retriable: an error a kubelet would retry. Network timeouts count (a restarted, loaded
// apiserver answers a TLS handshake late, and a lost status write would leave a node held
// for good), and so does a request cut off by its HTTP/2 connection being closed under it;
// the http2 package does not export that error, so it is known by its text, as
// utilnet.IsHTTP2ConnectionLost knows its sibling.
func retriable(err error) bool {
	var netErr net.Error
	return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || http2ForceClosed(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) && netErr.Timeout()
}

// http2ForceClosed: the request failed because its HTTP/2 connection was closed locally
// while it was in flight.
func http2ForceClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "http2: client connection force closed")
}

// heartbeat renews every node's Lease, as kubelets do, so the node-lifecycle controller
// keeps the nodes healthy for as long as a scenario runs.
//
// Kubelets renew independently, so a round is spread evenly over the interval rather than
// fired at once, on a few writers of its own (renewals must not queue ahead of Pod writes).
// A round used to go as fast as 8 writers allowed, one after another: on a plane saturated
// by a 5000-node burst, where a write takes a few hundred ms, such a round can outlast the
// node-monitor grace period (3m), and the nodes renewed last go unreachable (a NoSchedule
// taint their init DaemonSet Pods do not tolerate). Spread out, a round takes half the
// interval whatever the plane's latency, and heartbeatWriters bound only the renewals in
// flight. A missed renewal is harmless (the
// lease lasts 120s).
func (k *Kubelet) heartbeat(ctx context.Context) {
	every := k.LeaseRenew
	if every <= 0 {
		every = leaseRenew
	}
	k.everyNode(ctx, every, k.registered, func(ctx context.Context, n string) {
		_ = k.renewLease(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	})
}

// everyNode calls write for each of nodes() once per interval until ctx ends, spread evenly
// over the first half of the interval, at most heartbeatWriters at once.
func (k *Kubelet) everyNode(ctx context.Context, interval time.Duration, nodes func() []string, write func(context.Context, string)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		names := nodes()
		var g errgroup.Group
		g.SetLimit(heartbeatWriters)
		start, step := time.Now(), interval/2/time.Duration(max(1, len(names)))
		for i, n := range names {
			if d := time.Until(start.Add(time.Duration(i) * step)); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			g.Go(func() error {
				write(ctx, n)
				return nil
			})
		}
		_ = g.Wait()
	}
}

// heartbeatWriters bounds the Lease renewals in flight.
const heartbeatWriters = 32

// pod drives one Pod bound to one of our nodes, once. The writes run on their own
// goroutines (at most kubeletWriters at once): a real kubelet per node writes in parallel
// with every other, and one slow write must not hold up the informer, or under a burst the
// fake kubelet — not the gate — would be what the run measures. Within a Pod, its writes
// stay in order: driveInit makes its first write before it arms any timer.
func (k *Kubelet) pod(p *corev1.Pod) {
	k.mu.Lock()
	_, ours := k.nodes[p.Spec.NodeName]
	first := ours && !k.handled[string(p.UID)]
	if first {
		k.handled[string(p.UID)] = true
	}
	k.mu.Unlock()
	switch {
	case !ours:
	case p.DeletionTimestamp != nil:
		k.async(func() { k.finishDeletion(p) })
	case first:
		k.async(func() { k.drive(p) })
	}
}

// kubeletWriters bounds the fake kubelet's concurrent Pod writes.
const kubeletWriters = 64

func (k *Kubelet) async(f func()) {
	go func() {
		k.writers <- struct{}{}
		defer func() { <-k.writers }()
		f()
	}()
}

// finishDeletion removes a terminating Pod at once: its containers are gone, as a kubelet
// would report.
func (k *Kubelet) finishDeletion(p *corev1.Pod) {
	k.mu.Lock()
	delete(k.written, p.UID)
	k.mu.Unlock()
	err := Retry(k.ctx, func() error {
		return k.Client.CoreV1().Pods(p.Namespace).Delete(k.ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID}})
	})
	if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.fail(err)
	}
}

// drive plays an init Pod's timeline, or makes any other Pod Running and Ready.
func (k *Kubelet) drive(p *corev1.Pod) {
	for i := range k.Init {
		in := &k.Init[i]
		if labels.SelectorFromSet(in.Labels).Matches(labels.Set(p.Labels)) {
			k.driveInit(p, in)
			return
		}
	}
	k.fail(k.setStatus(p, true, 0))
}

// driveInit plays the init Pod's timeline.
func (k *Kubelet) driveInit(p *corev1.Pod, in *scenario.InitDaemonSet) {
	tl := in.Ready
	if k.doom(in, p.Spec.NodeName) {
		tl.Mode = scenario.ModeNever
	}
	delay := k.delay(p.Spec.NodeName, in.Name, 0, tl)
	k.fail(k.setStatus(p, false, 0))
	switch tl.Mode {
	case scenario.ModeReady:
		k.after(delay, func() error { return k.ready(p, k.setStatus(p, true, 0)) })
	case scenario.ModeNever:
	case scenario.ModeCrashLoop:
		k.after(delay, func() error { return k.setStatus(p, false, 3) })
	case scenario.ModeAnnotate:
		k.after(delay, func() error { return k.ready(p, k.annotateReady(p)) })
	case scenario.ModeFlap:
		flaps := tl.Flaps
		if flaps <= 0 {
			flaps = 1
		}
		step := tl.After
		if step <= 0 {
			step = time.Second
		}
		for i := 0; i < flaps; i++ {
			up := delay + time.Duration(2*i)*step
			k.after(up, func() error { return k.ready(p, k.setStatus(p, true, 0)) })
			k.after(up+step/2, func() error { return k.setStatus(p, false, int32(i+1)) })
		}
		k.after(delay+time.Duration(2*flaps)*step, func() error { return k.ready(p, k.setStatus(p, true, int32(flaps))) })
	}
}

// doom reports whether the DaemonSet's Pods never warm on the node: it is among the first
// NeverOnFirst nodes to run one. A node keeps its fate for the run.
func (k *Kubelet) doom(in *scenario.InitDaemonSet, node string) bool {
	if in.NeverOnFirst <= 0 {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.doomed == nil {
		k.doomed = map[string]map[string]bool{}
	}
	nodes, ok := k.doomed[in.Name]
	if !ok {
		nodes = map[string]bool{}
		k.doomed[in.Name] = nodes
	}
	if doomed, seen := nodes[node]; seen {
		return doomed
	}
	nodes[node] = len(nodes) < in.NeverOnFirst // the first nodes seen are the doomed ones
	return nodes[node]
}

// ready reports an accepted ready write.
func (k *Kubelet) ready(p *corev1.Pod, err error) error {
	if err == nil && k.ReadyAccepted != nil {
		k.ReadyAccepted(p.Spec.NodeName, time.Now())
	}
	return err
}

// delay is After ± Jitter, drawn from a source seeded by (seed, node, DaemonSet), and by
// the boot for a node that has rebooted, so that each boot draws afresh.
func (k *Kubelet) delay(node, ds string, boot int, tl scenario.PodTimeline) time.Duration {
	if tl.Jitter <= 0 {
		return tl.After
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", node, ds)
	if boot > 0 {
		fmt.Fprintf(h, "\x00%d", boot)
	}
	rng := rand.New(rand.NewPCG(k.Seed, h.Sum64()))
	return tl.After - tl.Jitter + time.Duration(rng.Int64N(int64(2*tl.Jitter)+1))
}

func (k *Kubelet) after(d time.Duration, f func() error) {
	time.AfterFunc(d, func() {
		if k.ctx.Err() == nil {
			k.fail(f())
		}
	})
}

// setStatus writes a Running status with every container ready or not.
func (k *Kubelet) setStatus(p *corev1.Pod, ready bool, restarts int32) error {
	return k.updatePod(p, func(cur *corev1.Pod) {
		now := metav1.Now()
		cond := corev1.ConditionFalse
		if ready {
			cond = corev1.ConditionTrue
		}
		cur.Status.Phase = corev1.PodRunning
		if cur.Status.StartTime == nil {
			cur.Status.StartTime = &now
		}
		cur.Status.PodIP, cur.Status.HostIP = "10.244.0.1", "10.0.0.1"
		cur.Status.Conditions = setCondition(cur.Status.Conditions, corev1.PodReady, cond, now)
		cur.Status.Conditions = setCondition(cur.Status.Conditions, corev1.ContainersReady, cond, now)
		cur.Status.Conditions = setCondition(cur.Status.Conditions, corev1.PodInitialized, corev1.ConditionTrue, now)
		cur.Status.Conditions = setCondition(cur.Status.Conditions, corev1.PodScheduled, corev1.ConditionTrue, now)
		cur.Status.ContainerStatuses = nil
		for _, c := range cur.Spec.Containers {
			st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: ready, RestartCount: restarts, Started: ptr.To(true),
				ContainerID: containerID(cur, c.Name, restarts),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}
			if restarts > 0 && !ready {
				st.Started = ptr.To(false)
				st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			}
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, st)
		}
	}, true)
}

// containerID is the ID a container runtime gives the Pod's container on its restarts-th
// start, as a real kubelet reports it: one per start, never reused.
func containerID(p *corev1.Pod, name string, restarts int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", p.UID, name, restarts))
	return "containerd://" + hex.EncodeToString(sum[:])
}

func (k *Kubelet) annotateReady(p *corev1.Pod) error {
	return k.updatePod(p, func(cur *corev1.Pod) {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations["startup.k8s.io/ready"] = "true"
	}, false)
}

func (k *Kubelet) updatePod(p *corev1.Pod, mutate func(*corev1.Pod), status bool) error {
	pods := k.Client.CoreV1().Pods(p.Namespace)
	// The first attempt writes over the copy this kubelet last wrote, else the informer's
	// (one request on the hot path); a conflict means it was stale, and every retry reads
	// afresh.
	k.mu.Lock()
	cur := k.written[p.UID]
	k.mu.Unlock()
	if cur == nil {
		cur = p
	}
	cur = cur.DeepCopy()
	return Retry(k.ctx, func() error {
		if cur == nil {
			fresh, err := pods.Get(k.ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && (fresh.UID != p.UID || fresh.DeletionTimestamp != nil)) {
				return nil
			}
			if err != nil {
				return err
			}
			cur = fresh
		}
		defer func() { cur = nil }()
		mutate(cur)
		var (
			out *corev1.Pod
			err error
		)
		if status {
			out, err = pods.UpdateStatus(k.ctx, cur, metav1.UpdateOptions{})
		} else {
			out, err = pods.Update(k.ctx, cur, metav1.UpdateOptions{})
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			out.ManagedFields = nil // as the informer's copies
			k.mu.Lock()
			k.written[p.UID] = out
			k.mu.Unlock()
		}
		return err
	})
}

func setCondition(conds []corev1.PodCondition, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) []corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			if conds[i].Status != s {
				conds[i].Status, conds[i].LastTransitionTime = s, now
			}
			return conds
		}
	}
	return append(conds, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

// SetInitReady makes the Pods of init DaemonSet initName on the given nodes (every node of
// the scenario when nodes is empty) Ready or not Ready, as an agent that crashes or
// recovers would. It returns how many Pods it wrote.
func (k *Kubelet) SetInitReady(initName string, nodes []string, ready bool) (int, error) {
	var sel labels.Selector
	for _, in := range k.Init {
		if in.Name == initName {
			sel = labels.SelectorFromSet(in.Labels)
		}
	}
	if sel == nil {
		return 0, fmt.Errorf("no init DaemonSet %q", initName)
	}
	k.mu.Lock()
	var pods []*corev1.Pod
	for _, p := range k.written {
		if sel.Matches(labels.Set(p.Labels)) && (len(nodes) == 0 || slices.Contains(nodes, p.Spec.NodeName)) {
			pods = append(pods, p)
		}
	}
	k.mu.Unlock()
	// All at once: a toggle that reaches the last node seconds after the first (one write
	// after another, on a busy plane) would stretch a flap into an outage.
	var g errgroup.Group
	g.SetLimit(kubeletWriters)
	for _, p := range pods {
		g.Go(func() error {
			err := k.setStatus(p, ready, 0)
			if ready {
				err = k.ready(p, err)
			}
			return err
		})
	}
	return len(pods), g.Wait()
}

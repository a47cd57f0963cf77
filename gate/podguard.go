package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// PodGuardPath is where the optional Pod guard validating webhook is served.
const PodGuardPath = "/validate-pod"

// PodGuard closes the one path around the taint: a Pod created with spec.nodeName set, or a
// direct pods/binding, never passes through the scheduler, so NoSchedule does not stop it.
// The guard denies such a Pod when its node still holds the startup taint and the Pod does
// not tolerate it. Mirror Pods are exempt: the kubelet creates them for static Pods and
// cannot be told no. It is served with failurePolicy Ignore — the taint stays the primary
// protection, and a guard that failed closed would block every Pod during a gate outage.
type PodGuard struct {
	// Cache is the gate's cache: Nodes, and the init Pods in its scope.
	Cache client.Reader
	// API reads what the cache does not hold or may not hold yet: a binding's Pod, a
	// node's init Pods, a released node that may have rebooted, and a node the cache
	// cannot give (not synced yet, or registered a moment ago).
	API    client.Reader
	Config *config.Config
	// Pods are the caches of the config's Pod scopes past the first, which Cache holds.
	Pods PodCaches
	// Labels are the label keys the cache keeps on a Node (nil: every key), so that a
	// continuous rule's check reads a DaemonSet's targets as the controller does.
	Labels CachedLabels
	// Timeout is the webhook's timeoutSeconds (0: DefaultPodGuardTimeout). The apiserver
	// allows what the guard has not answered by then (failurePolicy Ignore), so the guard's
	// reads get half of it and the guard answers itself: an explore saw a restarted gate's
	// reads take 9.9 s, and four Pods bind in a continuous rule's window.
	Timeout time.Duration
}

// DefaultPodGuardTimeout is the shipped webhook's timeoutSeconds.
const DefaultPodGuardTimeout = 3 * time.Second

// budget is how long the guard's reads may take. The apiserver's clock starts before the
// guard's, at its call: the rest of the timeout is the call's way there and back, which a
// loaded apiserver stretches. An explore that loaded it saw nine of the guard's reads run
// out a budget of three quarters of 3 s, and nine Pods bound early in that run.
func (g *PodGuard) budget() time.Duration {
	t := g.Timeout
	if t <= 0 {
		t = DefaultPodGuardTimeout
	}
	return t / 2
}

// Handle decides one Pod CREATE or pods/binding CREATE. A Binding carries no tolerations,
// only the Pod it binds does, so the guard first decides as if the Pod tolerated nothing:
// a toleration can only turn a denial into an allow, and when that answer is an allow (a
// released node, the common case) the binding costs no read of its Pod. Every answer is
// counted with its reason, errors among them.
func (g *PodGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, g.budget())
	defer cancel()
	t, err := target(req)
	if err != nil {
		podGuardRequests.WithLabelValues("error", reasonMalformed).Inc()
		return admission.Errored(http.StatusBadRequest, err)
	}
	v := g.judge(ctx, t)
	podGuardRequests.WithLabelValues(v.result(), v.reason).Inc()
	return v.response()
}

// The reasons podGuardRequests counts an answer by.
const (
	reasonMalformed  = "malformed"        // the request could not be read (an error, 400)
	reasonUnbound    = "not-bound"        // no node named, or a mirror Pod
	reasonFree       = "not-held"         // no rule holds the node for such a Pod
	reasonTolerated  = "tolerated"        // the Pod tolerates what holds the node
	reasonNoNode     = "node-not-found"   // the node does not exist
	reasonNodeUnread = "node-unread"      // the node could not be read
	reasonHeld       = "held"             // a taint the gate placed holds the node
	reasonRebooted   = "rebooted"         // a reboot's re-gate is coming
	reasonUnmet      = "unmet"            // a continuous rule's requirements fail
	reasonPodsUnread = "init-pods-unread" // a window may be open, its init Pods unread
	reasonPodUnread  = "pod-unread"       // the node holds, and the binding's Pod is unread
)

// verdict is the guard's answer, with the reason it is counted by.
type verdict struct {
	allowed bool
	reason  string
	msg     string
}

func allow(reason, msg string) verdict { return verdict{allowed: true, reason: reason, msg: msg} }
func deny(reason, msg string) verdict  { return verdict{reason: reason, msg: msg} }

func (v verdict) result() string {
	if v.allowed {
		return "allowed"
	}
	return "denied"
}

func (v verdict) response() admission.Response {
	if v.allowed {
		return admission.Allowed(v.msg)
	}
	return admission.Denied(v.msg)
}

// judge decides a bound Pod or a Binding. Only a binding the guard would deny a Pod that
// tolerates nothing reads its Pod, and a Pod that cannot be read then is denied: the node
// is held, or a window is open on it, and the scheduler retries.
func (g *PodGuard) judge(ctx context.Context, t bindTarget) verdict {
	switch {
	case t.node == "":
		return allow(reasonUnbound, "")
	case t.pod == nil:
		return g.decide(ctx, t.node, t.tolerations)
	}
	rd := &reads{}
	v := g.decideWith(ctx, rd, t.node, nil)
	if v.allowed {
		return v
	}
	pod := &corev1.Pod{}
	if err := g.API.Get(ctx, *t.pod, pod); err != nil {
		return deny(reasonPodUnread, fmt.Sprintf("%s; and pod %s of the binding cannot be read now (%v) to see whether it tolerates that; the binding is retried",
			v.msg, t.pod, err))
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return allow(reasonUnbound, "")
	}
	return g.decideWith(ctx, rd, t.node, pod.Spec.Tolerations)
}

// reads are what one request has read, each at most once: the second pass of a binding,
// with its Pod's tolerations, judges the node and Pods the first pass read, so that a read
// that fails the second time cannot turn the first pass's denial into an allow.
type reads struct {
	node, live memo[*corev1.Node]
	initPods   memo[[]*corev1.Pod]
	reqs       memo[requirements]
}

// memo is one read's outcome, error included.
type memo[T any] struct {
	done bool
	v    T
	err  error
}

func (m *memo[T]) get(read func() (T, error)) (T, error) {
	if !m.done {
		m.v, m.err = read()
		m.done = true
	}
	return m.v, m.err
}

// decide judges a Pod with these tolerations bound to the node, on reads of its own.
func (g *PodGuard) decide(ctx context.Context, nodeName string, tolerations []corev1.Toleration) verdict {
	return g.decideWith(ctx, &reads{}, nodeName, tolerations)
}

func (g *PodGuard) decideWith(ctx context.Context, rd *reads, nodeName string, tolerations []corev1.Toleration) verdict {
	node, err := rd.node.get(func() (*corev1.Node, error) {
		n, fromAPI, err := g.node(ctx, nodeName)
		if fromAPI && err == nil {
			rd.live = memo[*corev1.Node]{done: true, v: n} // read live already
		}
		return n, err
	})
	if apierrors.IsNotFound(err) {
		return allow(reasonNoNode, "node not found")
	}
	if err != nil {
		if g.Config.HasWindows(tolerations) {
			return deny(reasonNodeUnread, fmt.Sprintf("node %q cannot be read now (%v), and a rule's window may be open on it; the binding is retried",
				nodeName, err))
		}
		return allow(reasonNodeUnread, "cannot read the node: "+err.Error())
	}
	if rd.live.done && rd.live.err == nil {
		node = rd.live.v // the copy the first pass judged, as the apiserver has it
	} else if _, held := g.Config.HoldingTaint(node, tolerations); held && !rd.live.done {
		// A denial rests on the node as the apiserver has it: the gate's cache can lag
		// its own release by seconds on a loaded apiserver, and a binding denied then is
		// denied on a node no rule holds. Read it (watched), and judge that copy from here
		// on; when it cannot be read, the cached taint stands.
		if live, err := rd.live.get(func() (*corev1.Node, error) { return g.watchedNode(ctx, node) }); err == nil {
			node = live
		} else if apierrors.IsNotFound(err) {
			return allow(reasonNoNode, "node not found")
		}
	}
	if g.Config.RebootExposed(node, tolerations) {
		// The kubelet's new boot ID and a binding can arrive a millisecond apart, faster
		// than the gate's cache follows; the scheduler's cache lags the same way, so the
		// gate's cache here would let through the very binding the guard is for. The
		// apiserver's watch cache has the boot first, after etcd (watched).
		live, err := rd.live.get(func() (*corev1.Node, error) { return g.watchedNode(ctx, node) })
		switch {
		case apierrors.IsNotFound(err):
			return allow(reasonNoNode, "node not found")
		case err != nil:
			// The cached node may be behind a reboot that nothing else tells of: a cut
			// connection is also what leaves the cache behind. The scheduler retries.
			return deny(reasonNodeUnread, fmt.Sprintf("node %q may have rebooted, and its boot cannot be read now (%v); the binding is retried",
				nodeName, err))
		}
		node = live
		if v, denied := g.decideRebooted(ctx, rd, node, tolerations); denied {
			return v
		}
	}
	taint, held := g.Config.HoldingTaint(node, tolerations)
	if !held {
		v := g.decideContinuous(ctx, rd, node, tolerations)
		if _, heldOther := g.Config.HoldingTaint(node, nil); v.allowed && heldOther {
			v.reason = reasonTolerated
		}
		return v
	}
	return deny(reasonHeld, fmt.Sprintf("node %q still holds startup taint %s and the pod does not tolerate it; wait for the node to be released",
		nodeName, taint.ToString()))
}

// cacheWait bounds a read of the cache: a cache that has started and not yet synced (a
// restarted gate serves its webhooks meanwhile) blocks until it has, which would take the
// webhook's whole timeout, and the API answers then instead.
const cacheWait = 250 * time.Millisecond

// node reads the Node from the cache, or from the API when the cache cannot give it within
// cacheWait: a restarted gate serves its webhooks before its cache has synced, and a node
// the cache has not seen yet may have registered a moment ago.
// It says whether the API gave it.
func (g *PodGuard) node(ctx context.Context, name string) (*corev1.Node, bool, error) {
	node := &corev1.Node{}
	cctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	cacheErr := g.Cache.Get(cctx, types.NamespacedName{Name: name}, node)
	if cacheErr == nil {
		return node, false, nil
	}
	live, err := g.liveNode(ctx, name)
	if err != nil && !apierrors.IsNotFound(err) {
		// The cache's error is words only: a node the cache has not seen is NotFound there,
		// and must not make a failed read look like a node that does not exist.
		err = fmt.Errorf("%w (from the cache: %s)", err, cacheErr.Error())
	}
	return live, true, err
}

// watchedNode is the node as the apiserver's watch cache has it, no older than the cached
// copy given (watched).
func (g *PodGuard) watchedNode(ctx context.Context, cached *corev1.Node) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := watched(ctx, g.API, cached, n); err != nil {
		return nil, err
	}
	return n, nil
}

// liveNode reads the Node from the API.
func (g *PodGuard) liveNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := g.API.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
		return nil, err
	}
	return n, nil
}

// decideRebooted closes the window between a reboot and its re-gate: a rule that gates
// reboots sees the node on a new boot, and its state, read with the node's init Pods from
// the API, is rebooted (no fresh readiness yet; the re-gate is coming). A node whose init
// Pods are already Ready again on the new boot (rebooted-ready) is not held; one whose init
// Pods cannot be read is, as the two cannot be told apart.
func (g *PodGuard) decideRebooted(ctx context.Context, rd *reads, node *corev1.Node, tolerations []corev1.Toleration) (verdict, bool) {
	for _, r := range g.Config.RebootWindows(node, tolerations) {
		if r.Completed(node) && !r.BootOf(node).Rebooted() {
			continue // still on the boot the rule released it on
		}
		pods, err := rd.initPods.get(func() ([]*corev1.Pod, error) { return g.initPodsOn(ctx, node.Name) })
		if err != nil {
			return deny(reasonPodsUnread, fmt.Sprintf("node %q rebooted and its init pods cannot be read now (%v), so whether rule %s's taint is coming back is unknown; the binding is retried",
				node.Name, err, r.Name)), true
		}
		n := adopted(r, g.Config.Readiness(), node, pods)
		b := r.BootOf(n)
		if !b.Rebooted() {
			continue
		}
		if st, _ := rule.StateOf(r, g.Config.Readiness(), rule.Input{Node: n, Pods: pods, Now: time.Now()}); st == rule.StateRebooted {
			return deny(reasonRebooted, fmt.Sprintf("node %q rebooted (boot %s, released on boot %s) and rule %s's taint %s is coming back; the pod does not tolerate it",
				node.Name, b.Current, b.Recorded, r.Name, r.Taint.ToString())), true
		}
	}
	return verdict{}, false
}

// adopted is the node as rule r sees it: itself, or, when the gate released it under another
// taint's record (r was added, or given a new taint) and r has not recorded it as released
// yet, a copy with the adoption r is about to write, that record's boot and readiness with
// it. A reboot before the adoption is then the rule's to hold.
func adopted(r *rule.Rule, rd rule.Readiness, node *corev1.Node, pods []*corev1.Pod) *corev1.Node {
	if r.Completed(node) {
		return node
	}
	d := rule.Decide(r, rd, rule.Input{Node: node, Pods: pods, Now: time.Now()})
	if d.Write != rule.WriteAdopt {
		return node
	}
	n := node.DeepCopy()
	r.Apply(d, n, time.Now())
	return n
}

// decideContinuous closes a continuous rule's window: the rule has released the node, its
// requirements have stopped holding, and its taint is not back yet (the settle time, then
// the write). A suspended rule puts nothing back, so it has no such window. A binding then
// is denied as if the taint were there. The node's init Pods are read from the API only: a
// cache that lags the Pod's unready write would reopen the very window the guard closes,
// and when the API cannot be read the cache is behind by construction (its watch runs on
// the same connection), so the binding is denied and the scheduler tries again. An explore
// that cut the gate's connections for 5 s saw 7 Pods bound on a cached Ready. A component
// whose DaemonSet targets the node counts as the controller counts it (rule.ExpectedOn):
// its Pod deleted, it is unmet, not absent.
func (g *PodGuard) decideContinuous(ctx context.Context, rd *reads, node *corev1.Node, tolerations []corev1.Toleration) verdict {
	for _, r := range g.Config.Enforced() {
		if r.Mode != rule.Continuous || r.Suspend || !r.Matches(node) || !r.Completed(node) || r.HasTaint(node) || r.Tolerates(tolerations) {
			continue
		}
		req, err := rd.reqs.get(func() (requirements, error) { return g.requirements(ctx, node.Name) })
		if err != nil {
			return deny(reasonPodsUnread, fmt.Sprintf("node %q: rule %s's requirements cannot be read now (%v), and a cached view may be behind the change the rule waits for; the binding is retried",
				node.Name, r.Name, err))
		}
		expected, err := g.expectedOn(ctx, rd, r, node, req.dss)
		if err != nil {
			return deny(reasonPodsUnread, fmt.Sprintf("node %q: rule %s's requirements cannot be read now (%v); the binding is retried", node.Name, r.Name, err))
		}
		d := rule.Decide(r, g.Config.Readiness(), rule.Input{Node: node, Pods: req.pods, Expected: expected, Now: time.Now()})
		if !d.Met {
			return deny(reasonUnmet, fmt.Sprintf("node %q: rule %s's requirements do not hold (%s) and its taint %s is coming back; the pod does not tolerate it",
				node.Name, r.Name, d.Reason, r.Taint.ToString()))
		}
	}
	return allow(reasonFree, "")
}

// requirements are what a continuous rule's check reads: the node's init Pods, from the
// API, and the DaemonSets, from the cache as the controller reads them (from the API when
// the cache cannot give them within cacheWait).
type requirements struct {
	pods []*corev1.Pod
	dss  []appsv1.DaemonSet
}

func (g *PodGuard) requirements(ctx context.Context, nodeName string) (requirements, error) {
	pods, err := g.liveInitPods(ctx, nodeName)
	if err != nil {
		return requirements{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	list := &appsv1.DaemonSetList{}
	if cacheErr := g.Cache.List(cctx, list); cacheErr != nil {
		// A restarted gate serves before its cache has synced (node).
		if err := g.API.List(ctx, list); err != nil {
			return requirements{}, fmt.Errorf("listing daemonsets: %w (from the cache: %s)", err, cacheErr.Error())
		}
	}
	return requirements{pods: pods, dss: list.Items}, nil
}

// expectedOn is rule.ExpectedOn for the node as the controller sees it: the Node from the
// API when a DaemonSet of the rule's components selects nodes by a label the cache drops
// (Reconciler.labelled).
func (g *PodGuard) expectedOn(ctx context.Context, rd *reads, r *rule.Rule, node *corev1.Node, dss []appsv1.DaemonSet) (map[string]bool, error) {
	if ds, _ := r.LabelOutside(dss, g.Labels.Keeps); ds != "" {
		live, err := rd.live.get(func() (*corev1.Node, error) { return g.watchedNode(ctx, node) })
		if err != nil {
			return nil, err
		}
		node = live
	}
	return r.ExpectedOn(node, dss), nil
}

// initPodsOn lists the init Pods bound to the node, from the API; from the cache (within
// cacheWait) when the API cannot be read for a moment (a cut connection, an apiserver
// restart), for the reboot window: a cache behind the reboot shows the old boot's
// readiness, which the rule does not count, so a lagging view errs towards a denial.
func (g *PodGuard) initPodsOn(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	pods, apiErr := listInitPods(ctx, OneReader(g.API), g.Config, nodeName)
	if apiErr == nil {
		return pods, nil
	}
	cctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	pods, err := listInitPods(cctx, g.Pods.Reader(g.Cache), g.Config, nodeName)
	if err != nil {
		return nil, errors.Join(apiErr, fmt.Errorf("from the cache: %w", err))
	}
	return pods, nil
}

// listInitPods lists the Pods bound to the node in each of the config's Pod scopes, each
// through the reader read gives it: what the cached decisions read, as the caches have
// them, or as the API does (the Pod guard, and a re-taint's confirmation).
func listInitPods(ctx context.Context, read func(scope int) client.Reader, cfg *config.Config, nodeName string) ([]*corev1.Pod, error) {
	return ListInitPods(ctx, read, cfg, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(PodNodeNameField, nodeName)})
}

// ListInitPods lists the Pods of each of the config's Pod scopes (its namespace and label
// selector), each through the reader read gives it, with opts besides. A Pod two scopes
// select is listed once.
func ListInitPods(ctx context.Context, read func(scope int) client.Reader, cfg *config.Config, opts ...client.ListOption) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	seen := map[types.UID]bool{}
	for i, sc := range cfg.PodScopes() {
		list := &corev1.PodList{}
		scoped := append([]client.ListOption{client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: sc.Selector}}, opts...)
		if err := read(i).List(ctx, list, scoped...); err != nil {
			return nil, fmt.Errorf("listing init pods (%s in namespace %q): %w", sc.Selector, sc.Namespace, err)
		}
		for j := range list.Items {
			if p := &list.Items[j]; !seen[p.UID] {
				seen[p.UID] = true
				pods = append(pods, p)
			}
		}
	}
	return pods, nil
}

// OneReader reads every Pod scope through c: the API's reader, or a cache that holds them
// all.
func OneReader(c client.Reader) func(int) client.Reader {
	return func(int) client.Reader { return c }
}

// PodCaches are the caches of a config's Pod scopes past the first (config.PodScopes), in
// scope order: a namespace whose components share no label key takes one informer per
// component selector, and a label selector cannot say "this key or that", so each is a
// cache of its own. The first scope is the manager's cache's.
type PodCaches []client.Reader

// Reader gives the reader of each scope: first the manager's cache, then these.
func (p PodCaches) Reader(first client.Reader) func(int) client.Reader {
	return func(i int) client.Reader {
		if i == 0 || i > len(p) {
			return first
		}
		return p[i-1]
	}
}

// bindTarget is what a request binds: the node, and either the Pod's tolerations (a Pod
// created bound) or the Pod a Binding names, whose tolerations are read only when needed.
type bindTarget struct {
	node        string
	tolerations []corev1.Toleration
	pod         *types.NamespacedName
}

// target reads what the request binds, without a read of the API. Mirror Pods and Pods not
// yet bound yield no node (allowed).
func target(req admission.Request) (bindTarget, error) {
	if req.Kind.Group != "" || req.Object.Raw == nil {
		return bindTarget{}, fmt.Errorf("pod guard handles core/v1 Pod and Binding, got %q", req.Kind.String())
	}
	switch req.Kind.Kind {
	case "Pod":
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return bindTarget{}, fmt.Errorf("decoding pod: %w", err)
		}
		if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
			return bindTarget{}, nil
		}
		return bindTarget{node: pod.Spec.NodeName, tolerations: pod.Spec.Tolerations}, nil
	case "Binding":
		binding := &corev1.Binding{}
		if err := json.Unmarshal(req.Object.Raw, binding); err != nil {
			return bindTarget{}, fmt.Errorf("decoding binding: %w", err)
		}
		name := binding.Name
		if name == "" {
			name = req.Name
		}
		return bindTarget{node: binding.Target.Name, pod: &types.NamespacedName{Namespace: req.Namespace, Name: name}}, nil
	}
	return bindTarget{}, fmt.Errorf("pod guard handles core/v1 Pod and Binding, got %q", req.Kind.String())
}

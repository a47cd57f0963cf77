package gate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// PodNodeNameField indexes the cached init Pods by node; setup registers the index.
const PodNodeNameField = "spec.nodeName"

// Event reasons, one per state change of a node and rule.
const (
	ReasonHeld              = "StartupGateHeld"
	ReasonReleased          = "StartupGateReleased"
	ReasonTimedOut          = "StartupGateTimedOut"
	ReasonBackfilled        = "StartupGateBackfilled"
	ReasonBackfillUndone    = "StartupGateBackfillUndone"
	ReasonMissingToleration = "StartupGateMissingToleration"
	// ReasonComponentBlocked: a component's DaemonSet does not tolerate another taint of a
	// node the rule holds, so its Pod never comes.
	ReasonComponentBlocked = "StartupGateComponentBlocked"
	// ReasonRetainted: a continuous rule put its taint back; its requirements stopped holding.
	ReasonRetainted = "StartupGateRetainted"
	// ReasonLeftSelector: the node's labels left a rule's selector; the rule's taint came off.
	ReasonLeftSelector = "StartupGateLeftSelector"
	// ReasonRegated: a released node rebooted; a rule with onReboot: gate put its taint back.
	ReasonRegated = "StartupGateRegated"
	// ReasonOrphanLifted: the gate lifted a taint it placed for a rule it no longer runs.
	ReasonOrphanLifted = "StartupGateOrphanLifted"
	// ReasonJoined: a rule put its taint on a node another rule holds (the rule came after
	// the node's creation).
	ReasonJoined = "StartupGateJoined"
	// ReasonAdopted: a rule recorded a node the gate released under another taint's record
	// as released by it too.
	ReasonAdopted = "StartupGateAdopted"
	// ReasonSuspended: a suspended rule holds the node and will not release it until resumed.
	ReasonSuspended = "StartupGateSuspended"
	// ReasonWouldHold and ReasonWouldRelease are a dry-run rule's reports of what it would do.
	ReasonWouldHold    = "StartupGateWouldHold"
	ReasonWouldRelease = "StartupGateWouldRelease"

	eventActionGate          = "Gate"
	eventActionRelease       = "Release"
	eventActionBackfill      = "Backfill"
	eventActionCheckTolerate = "CheckToleration"
)

// Reconciler runs every rule on a node: fetch, then for each rule decide and act. It holds
// no state that matters for correctness; everything lives in the Node (taints and
// completion annotations), so a restart loses nothing that matters. The small in-memory
// table deduplicates events, feeds the gauges, and keeps what the API cannot say: since
// when a continuous rule's requirements have failed, and what a dry-run rule already
// reported.
type Reconciler struct {
	Client client.Client // cached: Nodes, DaemonSets and the init Pods only
	// Reader reads from the apiserver itself: a re-taint is confirmed there first (nil:
	// decided from the cache alone).
	Reader   client.Reader
	Writer   *NodeWriter
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Config   *config.Config
	// Backfill, when set, taints idle nodes that came up without the taint.
	Backfill *Backfiller
	// Labels are the label keys the cached Nodes carry (nil: all of them).
	Labels CachedLabels
	// Pods are the caches of the config's Pod scopes past the first, which Client holds.
	Pods PodCaches

	mu    sync.Mutex
	nodes map[string]*nodeState
	// budgetMu serializes the eviction budgets' decisions with their writes, and tainting
	// holds the budgeted taints this process wrote until the cache has caught up with them
	// (ledger): a late view can show another node's match before these taints, and sort it
	// ahead of them in the queue, where their place no longer counts them.
	budgetMu sync.Mutex
	tainting ledger
	// replaceMu serializes the replacements' decisions with their writes (timeoutPolicy
	// replace), and replacing holds the replacement marks this process wrote until the
	// cache has caught up with them (ledger): the cache may not show a mark just written,
	// and a replacement counted from it alone could pass the budget.
	replaceMu sync.Mutex
	replacing ledger
	// uncached: the DaemonSets and label keys labelled has logged, each once.
	uncached sync.Map
}

type nodeState struct {
	uid   string
	rules map[string]*ruleState
	// orphans: when this process first saw each orphaned taint on the node.
	orphans map[config.Orphan]time.Time
}

// ruleState is what this process remembers of one rule on one node.
type ruleState struct {
	held, timedOut bool
	// heldSince: when this process first saw the rule hold the node (not for a dry run),
	// for startupgate_oldest_held_seconds.
	heldSince time.Time
	// unmetSince: when a continuous rule's requirements were first seen failing.
	unmetSince time.Time
	// wouldRelease: a dry-run rule has reported its release.
	wouldRelease bool
	// wouldTaint: a dry-run condition rule has reported its taint; budgetDenied: a
	// condition rule's budget has held the node back (both reported once).
	wouldTaint, budgetDenied bool
	// suspended: a suspended rule has reported that it holds the node.
	suspended bool
	// claimDeleted: this process deleted the node's NodeClaim (timeoutPolicy replace), or
	// a dry-run rule reported that it would.
	claimDeleted bool
	// state is the node's state under the rule when last decided, as nodeStates counts it.
	state rule.State
	// blocked: the hold by a component that a taint keeps off the node was reported.
	blocked bool
}

// facts are what the rules read about a node, gathered once per reconcile.
type facts struct {
	node *corev1.Node
	// start is when the reconcile began: a release's decide stage is timed from it.
	start time.Time
	// pods and dss are read on first use (loaded): most Node events concern nodes that no
	// rule has to decide about (excluded, long released), and they read nothing more.
	loaded bool
	pods   []*corev1.Pod
	dss    []appsv1.DaemonSet
	// live: node and pods were read from the apiserver itself (a confirmed re-taint); a
	// second continuous rule on the node decides on them without reading again.
	live bool
	// labelled: the node as the apiserver has it, every label on it, once a decision
	// needed a label the cache does not keep.
	labelled *corev1.Node
	// blocked: the components of the rule decided last whose DaemonSets a taint of the
	// node keeps off (rule.Untolerated).
	blocked map[string]string
}

// Reconcile handles one node.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		r.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	f := &facts{node: node, start: time.Now()}
	if r.Config.Legacy(node) {
		// Records an earlier release kept under the rules' names move to the rules' taints
		// first: every decision below reads them there.
		written, _, err := r.Writer.Write(ctx, node, r.Config.Migrate)
		if err != nil {
			return reconcile.Result{}, err
		}
		f.node = written
	}
	// Orphans first: lifting one adds the taints admission adds now, which the rules and
	// backfill then find on the node.
	orphanAfter, orphanErr := r.orphans(ctx, f)
	if orphanErr != nil {
		return reconcile.Result{}, orphanErr
	}
	node = f.node
	// A node that came up without the taints and no rule has released: backfill's, while
	// it is idle. The rules run on after it: those that gate at creation find the node
	// untainted (backfill's) and wait for the taint, and a condition rule, which backfill
	// does not place, decides the node as on any other; a write on the copy backfill just
	// changed conflicts and decides again on the fresh one.
	if r.Backfill != nil && r.Config.Gated(node) && !r.Config.HasTaint(node) && !r.Config.Released(node) && !r.anyCompleted(node) && !r.Config.InService(node) {
		if err := r.Backfill.Node(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	var (
		requeue time.Duration
		errs    []error
	)
	soonest := func(after time.Duration) {
		if after > 0 && (requeue == 0 || after < requeue) {
			requeue = after
		}
	}
	// Every rule runs even when one fails: one rule's failed write must not leave the
	// node's other rules undecided until the retry.
	for _, rl := range r.Config.EffectiveRules() {
		after, err := r.rule(ctx, f, rl)
		errs = append(errs, err)
		soonest(after)
	}
	soonest(orphanAfter)
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// orphans lifts the taints the gate placed for rules it no longer runs (config.Orphans),
// each once it has been seen for the grace period, in one write with the taints admission
// would add now. It returns when the next grace ends.
func (r *Reconciler) orphans(ctx context.Context, f *facts) (time.Duration, error) {
	orphans := r.Config.Orphans(f.node)
	seen := r.seenOrphans(f.node, orphans)
	if r.Config.Frozen(f.node) {
		return 0, nil // seen, and lifted once the rule resumes and the grace has passed
	}
	var next time.Duration
	for _, o := range orphans {
		if wait := seen[o].Add(r.Config.OrphanGracePeriod.Duration).Sub(r.Clock.Now()); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		written, wrote, err := r.Writer.Write(ctx, f.node, func(n *corev1.Node) { r.Config.LiftOrphan(n, o) })
		if err != nil {
			return 0, fmt.Errorf("lifting orphaned taint %s of rule %q from node %q: %w", o.Taint.ToString(), o.Record, f.node.Name, err)
		}
		f.node = written
		if wrote {
			orphansLiftedTotal.WithLabelValues(o.Record).Inc()
			r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonOrphanLifted, eventActionRelease,
				"Removed taint %s (record %s), which no rule of the gate has any more (removed, given a new taint, or a dry run)", o.Taint.ToString(), o.Record)
			log.FromContext(ctx).Info("Lifted an orphaned taint", "node", klog.KObj(written), "record", o.Record, "taint", o.Taint.ToString())
		}
	}
	return next, nil
}

// seenOrphans notes when this process first saw each of the node's orphans, forgets those
// gone, and returns the moments.
func (r *Reconciler) seenOrphans(node *corev1.Node, orphans []config.Orphan) map[config.Orphan]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(node)
	if len(orphans) == 0 {
		st.orphans = nil
		return nil
	}
	seen := map[config.Orphan]time.Time{}
	for _, o := range orphans {
		at, ok := st.orphans[o]
		if !ok {
			at = r.Clock.Now()
		}
		seen[o] = at
	}
	st.orphans = seen
	return seen
}

// anyCompleted: some rule that writes has released the node once.
func (r *Reconciler) anyCompleted(node *corev1.Node) bool {
	for _, rl := range r.Config.Gating() {
		if rl.Completed(node) {
			return true
		}
	}
	return false
}

// decide runs rule.Decide for rl on the node, reading the node's init Pods and the
// DaemonSets from the cache the first time a rule needs them (and the node's labels from
// the apiserver, if a DaemonSet reads one the cache does not keep: labelled).
func (r *Reconciler) decide(ctx context.Context, f *facts, rl *rule.Rule, unmetSince time.Time) (rule.Decision, error) {
	if !f.loaded {
		pods, err := r.initPods(ctx, f.node.Name)
		if err != nil {
			return rule.Decision{}, err
		}
		list := &appsv1.DaemonSetList{}
		if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return rule.Decision{}, fmt.Errorf("listing daemonsets for node %q: %w", f.node.Name, err)
		}
		f.pods, f.dss, f.loaded = pods, list.Items, true
	}
	labelled, err := r.labelled(ctx, f, rl)
	if err != nil {
		return rule.Decision{}, err
	}
	f.blocked = rl.Untolerated(labelled, f.dss, r.Config.OwnTaint(f.node))
	return rule.Decide(rl, r.Config.Readiness(), rule.Input{Node: f.node, Pods: f.pods,
		Expected: rl.ExpectedOn(labelled, f.dss), Blocked: f.blocked, Now: r.Clock.Now(), UnmetSince: unmetSince}), nil
}

// rule runs one rule on the node and returns when to look again (0: on the next event). It
// names the node's state under the rule (rule.StateOf, through rule.Decide) and acts in it:
// the decision's one write, the events and the held gauge. Suspended, condition and
// dry-run rules have paths of their own.
func (r *Reconciler) rule(ctx context.Context, f *facts, rl *rule.Rule) (time.Duration, error) {
	switch {
	case rl.Suspend:
		r.suspended(ctx, f.node, rl)
		return 0, nil
	case rl.Mode == rule.Condition:
		return r.conditionRule(ctx, f, rl)
	case rl.DryRun:
		return r.dryRun(ctx, f, rl)
	}
	if st, _ := rule.StateOf(rl, r.Config.Readiness(), rule.Input{Node: f.node}); rl.Quiet(st) {
		// Decided on the node alone, without reading its Pods: most Node events concern
		// nodes no rule has anything to do about.
		r.unhold(f.node.Name, rl)
		r.noteState(f.node, rl, st)
		return 0, nil
	}
	st := r.track(ctx, f.node, rl, false)
	d, err := r.decide(ctx, f, rl, r.unmet(st))
	if err == nil && d.Confirm() {
		d, err = r.confirm(ctx, f, rl, d, r.unmet(st))
	}
	if err != nil {
		return 0, err
	}
	r.track(ctx, f.node, rl, d.State.Holds())
	if d.State.Holds() && len(f.blocked) > 0 {
		r.reportBlocked(ctx, f.node, rl, st, f.blocked)
	}
	if !d.State.Holds() && d.Write != rule.WriteRegate {
		r.unhold(f.node.Name, rl)
	}
	r.noteMet(st, d)
	after := d.RequeueAfter
	if d.Replace {
		after, err = r.replace(ctx, f, rl, st, d)
	} else {
		err = r.act(ctx, f, rl, st, d)
	}
	if err == nil {
		now, _ := rule.StateOf(rl, r.Config.Readiness(), rule.Input{Node: f.node, Pods: f.pods})
		r.noteState(f.node, rl, now)
	}
	return after, err
}

// noteState records the node's state under the rule, for the node-states gauge.
func (r *Reconciler) noteState(node *corev1.Node, rl *rule.Rule, st rule.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.ruleStateLocked(node, rl)
	if rs.state == st {
		return
	}
	if rs.state != "" {
		nodeStates.WithLabelValues(rl.Name, string(rs.state)).Dec()
	}
	rs.state = st
	nodeStates.WithLabelValues(rl.Name, string(st)).Inc()
}

// act makes the decision's write, with its event and log line, or says why it holds.
func (r *Reconciler) act(ctx context.Context, f *facts, rl *rule.Rule, st *ruleState, d rule.Decision) error {
	switch d.Write {
	case rule.WriteRelease:
		return r.release(ctx, f, rl, d)
	case rule.WriteTaint:
		return r.retaint(ctx, f, rl, d)
	case rule.WriteRegate:
		return r.regate(ctx, f, rl, d)
	case rule.WriteRemove:
		return r.remove(ctx, f, rl, d)
	case rule.WriteRecord, rule.WriteStale:
		return r.record(ctx, f, rl, d)
	case rule.WriteJoin, rule.WriteAdopt:
		return r.join(ctx, f, rl, d)
	}
	switch {
	case d.TimedOut && d.State.Holds():
		r.keepTimedOut(ctx, f.node, rl, st, d)
	case d.State.Holds():
		log.FromContext(ctx).V(1).Info("Holding node", "node", klog.KObj(f.node), "rule", rl.Name, "state", d.State, "reason", d.Reason, "requeueAfter", d.RequeueAfter)
	}
	return nil
}

// write makes the decision's write through the one Node writer.
func (r *Reconciler) write(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) (*corev1.Node, bool, error) {
	now := r.Clock.Now()
	written, wrote, err := r.Writer.Write(ctx, f.node, func(n *corev1.Node) { rl.Apply(d, n, now) })
	if err != nil {
		return nil, false, fmt.Errorf("writing node %q for rule %q (%s, state %s): %w", f.node.Name, rl.Name, d.Write, d.State, err)
	}
	f.node = written
	return written, wrote, nil
}

// confirm decides again, on the node and its Pods as the apiserver has them now, a decision
// whose write rests on the Pods being current (rule.Decision.Confirm). The cache can lag the
// apiserver by seconds on a loaded plane: a re-taint decided from it can put a taint back on
// a node whose component was Ready again seconds before, and a reboot decided from it can
// count the old boot's readiness as the new one's, or record too little of it as stale.
//
// The fresh decision is acted on, and f takes the fresh node and Pods: the Node write is
// guarded by the Node's version just read (a conflict re-reads the Node and Apply re-checks
// the boot). A re-taint is the exception: unless the fresh decision is a re-taint too, it
// comes back as no action. A node replaced under the same name, or gone, or out of the
// rule's selector, is the next event's to handle, with every check of rule() on the way,
// and what else the fresh copy says is a hold (the requirements hold again, or have not
// failed for the settle time).
func (r *Reconciler) confirm(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision, unmetSince time.Time) (rule.Decision, error) {
	if r.Reader == nil || f.live {
		return d, nil
	}
	fresh, err := r.read(ctx, f.node)
	if apierrors.IsNotFound(err) || err == nil && (fresh.node.UID != f.node.UID || !rl.Matches(fresh.node)) {
		return rule.Decision{State: d.State, Reason: "the node changed under the decision"}, nil
	}
	if err != nil {
		return rule.Decision{}, err
	}
	fresh.dss = f.dss
	fd, err := r.decide(ctx, fresh, rl, unmetSince)
	switch {
	case err != nil:
		return rule.Decision{}, err
	case d.Taint && !fd.Taint:
		if !rl.HasTaint(fresh.node) {
			log.FromContext(ctx).Info("Re-taint withdrawn: the apiserver's copy disagrees with the cache", "node", klog.KObj(fresh.node), "rule", rl.Name, "reason", fd.Reason)
		}
		return rule.Decision{State: fd.State, Met: fd.Met, Reason: fd.Reason, RequeueAfter: fd.RequeueAfter}, nil
	}
	f.node, f.pods, f.live = fresh.node, fresh.pods, true
	return fd, nil
}

// read gets the node and its init Pods from the apiserver.
func (r *Reconciler) read(ctx context.Context, cached *corev1.Node) (*facts, error) {
	node := &corev1.Node{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(cached), node); err != nil {
		return nil, fmt.Errorf("reading node %q: %w", cached.Name, err)
	}
	pods, err := listInitPods(ctx, OneReader(r.Reader), r.Config, node.Name)
	if err != nil {
		return nil, fmt.Errorf("listing init pods of node %q: %w", node.Name, err)
	}
	return &facts{node: node, pods: pods, loaded: true, live: true}, nil
}

func (r *Reconciler) initPods(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	pods, err := listInitPods(ctx, r.Pods.Reader(r.Client), r.Config, nodeName)
	if err != nil {
		return nil, fmt.Errorf("listing init pods of node %q: %w", nodeName, err)
	}
	return pods, nil
}

// release removes the rule's taint and, the first time, records the rule's completion, in
// one guarded write. A continuous rule whose requirements hold again comes here too, and a
// rebooted node whose init Pods are Ready again on the new boot.
func (r *Reconciler) release(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	node, now := f.node, r.Clock.Now()
	first := !rl.Completed(node)
	observeStage(stageDecide, f.start)
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil {
		return err
	}
	if !wrote || rl.HasTaint(written) {
		return nil // the node rebooted under the decision: decided again on the next event
	}
	r.unhold(node.Name, rl)
	if !first {
		r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonReleased, eventActionRelease, "Rule %s: removed taint %s again: %s", rl.Name, rl.Taint.Key, d.Reason)
		log.FromContext(ctx).Info("Released node again", "node", klog.KObj(node), "rule", rl.Name, "reason", d.Reason)
		return nil
	}
	outcome := "ready"
	if d.TimedOut {
		outcome = "timeout"
		timeoutsTotal.WithLabelValues(rl.Name, string(rule.TimeoutRelease)).Inc()
		r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonTimedOut, eventActionRelease, "Rule %s: released without readiness: %s", rl.Name, d.Reason)
	}
	releasesTotal.WithLabelValues(rl.Name, outcome).Inc()
	holdSeconds.WithLabelValues(rl.Name).Observe(now.Sub(node.CreationTimestamp.Time).Seconds())
	if !d.ReadyAt.IsZero() && !now.Before(d.ReadyAt) {
		releaseLatencySeconds.WithLabelValues(rl.Name).Observe(now.Sub(d.ReadyAt).Seconds())
	}
	r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonReleased, eventActionRelease, "Rule %s: removed startup taint %s: %s", rl.Name, rl.Taint.Key, d.Reason)
	log.FromContext(ctx).Info("Released node", "node", klog.KObj(node), "rule", rl.Name, "reason", d.Reason,
		"hold", now.Sub(node.CreationTimestamp.Time).Round(time.Millisecond))
	return nil
}

// regate puts the taint back on a node that rebooted since the rule released it, in one
// guarded write; from then on the rule holds it until its init Pods are Ready on containers
// of the new boot.
func (r *Reconciler) regate(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	boot := rl.BootOf(f.node)
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil || !wrote || !rl.Regated(written) {
		return err
	}
	regatesTotal.WithLabelValues(rl.Name).Inc()
	r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonRegated, eventActionGate,
		"Rule %s: node rebooted (boot %s, released on boot %s): taint %s is back until its components are Ready again", rl.Name, boot.Current, boot.Recorded, rl.Taint.Key)
	log.FromContext(ctx).Info("Node rebooted, taint back", "node", klog.KObj(written), "rule", rl.Name, "bootID", boot.Current, "releasedOnBootID", boot.Recorded)
	return nil
}

// record writes what the rule knows of the node's boot and readiness, and nothing else: the
// boot a released node runs and the readiness it counted there, or readiness that does not
// count on the boot the node runs now.
func (r *Reconciler) record(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil || !wrote {
		return err
	}
	log.FromContext(ctx).Info("Recorded the node's boot and readiness", "node", klog.KObj(written), "rule", rl.Name, "state", d.State,
		"bootID", written.Status.NodeInfo.BootID, "reason", d.Reason)
	return nil
}

// remove takes the rule's taint off a node the rule no longer holds: the node left the
// rule's selector (the rule placed the taint), or the rule stopped gating reboots while
// it held the node re-gated.
func (r *Reconciler) remove(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil || !wrote {
		return err
	}
	reason := ReasonReleased
	if d.State == rule.StateLeft {
		reason = ReasonLeftSelector
	}
	r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, reason, eventActionRelease, "Rule %s: removed taint %s: %s", rl.Name, rl.Taint.Key, d.Reason)
	log.FromContext(ctx).Info("Removed a rule's taint the rule no longer holds the node with", "node", klog.KObj(written), "rule", rl.Name, "state", d.State, "reason", d.Reason)
	return nil
}

// join brings a rule that came after the node's creation to the node: onto the hold of
// another rule (its taint goes on too), or, on a node in service, as a release recorded
// without a taint to take off.
func (r *Reconciler) join(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil || !wrote {
		return err
	}
	if d.Write == rule.WriteAdopt {
		r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonAdopted, eventActionRelease, "Rule %s: took the node over: %s", rl.Name, d.Reason)
		log.FromContext(ctx).Info("Took a node over", "node", klog.KObj(written), "rule", rl.Name, "reason", d.Reason)
		return nil
	}
	r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonJoined, eventActionGate, "Rule %s: put taint %s on: %s", rl.Name, rl.Taint.Key, d.Reason)
	log.FromContext(ctx).Info("Joined another rule's hold", "node", klog.KObj(written), "rule", rl.Name, "reason", d.Reason)
	return nil
}

// retaint puts a continuous rule's taint back on a released node, in one guarded write.
func (r *Reconciler) retaint(ctx context.Context, f *facts, rl *rule.Rule, d rule.Decision) error {
	written, wrote, err := r.write(ctx, f, rl, d)
	if err != nil || !wrote {
		return err
	}
	retaintsTotal.WithLabelValues(rl.Name).Inc()
	r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonRetainted, eventActionGate, "Rule %s: put taint %s back: %s", rl.Name, rl.Taint.Key, d.Reason)
	log.FromContext(ctx).Info("Re-tainted node", "node", klog.KObj(written), "rule", rl.Name, "reason", d.Reason)
	return nil
}

// dryRun decides as the rule would and reports it, once per node and outcome, writing
// nothing. It reads the node as if the rule had tainted it at creation.
func (r *Reconciler) dryRun(ctx context.Context, f *facts, rl *rule.Rule) (time.Duration, error) {
	node := f.node
	if !rl.Matches(node) || rl.Completed(node) {
		return 0, nil
	}
	st := r.track(ctx, node, rl, true)
	d, err := r.decide(ctx, f, rl, time.Time{})
	if err == nil && d.Replace && r.firstTime(&st.claimDeleted) {
		claim, _, ok := rule.NodeClaimOf(node)
		if !ok {
			claim = "none (no NodeClaim owns the node: it would be kept held)"
		}
		dryRunTotal.WithLabelValues(rl.Name, "would_replace").Inc()
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonWouldReplace, eventActionRelease, "Rule %s (dry run): would replace the node, deleting its NodeClaim %s: %s", rl.Name, claim, d.Reason)
		log.FromContext(ctx).Info("Dry run: would replace node", "node", klog.KObj(node), "rule", rl.Name, "nodeClaim", claim, "reason", d.Reason)
	}
	if err != nil || !d.Release {
		return d.RequeueAfter, err
	}
	if r.firstTime(&st.wouldRelease) {
		dryRunTotal.WithLabelValues(rl.Name, "would_release").Inc()
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonWouldRelease, eventActionRelease, "Rule %s (dry run): would remove taint %s: %s", rl.Name, rl.Taint.Key, d.Reason)
		log.FromContext(ctx).Info("Dry run: would release node", "node", klog.KObj(node), "rule", rl.Name, "reason", d.Reason)
	}
	return 0, nil
}

// suspended is all a suspended rule does: it writes nothing, and says once per node, with a
// Warning event, that its taint stays on until the rule resumes or an operator releases it.
// It speaks only for the nodes it selects: a node outside its selector that carries the same
// key is not one the rule would release.
func (r *Reconciler) suspended(ctx context.Context, node *corev1.Node, rl *rule.Rule) {
	if !rl.HasTaint(node) || !rl.Matches(node) {
		return
	}
	r.mu.Lock()
	rs := r.ruleStateLocked(node, rl)
	r.mu.Unlock()
	if !r.firstTime(&rs.suspended) {
		return
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonSuspended, eventActionRelease,
		"Rule %s is suspended: taint %s stays until the rule resumes or `gate release` removes it", rl.Name, rl.Taint.Key)
	log.FromContext(ctx).Info("Rule suspended, leaving node as it is", "node", klog.KObj(node), "rule", rl.Name)
}

// firstTime sets *flag, a report's mark in a node's rule state, and reports whether it was
// unset: what makes an event or a metric once per node and rule.
func (r *Reconciler) firstTime(flag *bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := !*flag
	*flag = true
	return first
}

// keepTimedOut alerts once per node and rule when the keep policy holds a timed-out node.
func (r *Reconciler) keepTimedOut(ctx context.Context, node *corev1.Node, rl *rule.Rule, st *ruleState, d rule.Decision) {
	if !r.firstTime(&st.timedOut) {
		return
	}
	timeoutsTotal.WithLabelValues(rl.Name, string(rule.TimeoutKeep)).Inc()
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonTimedOut, eventActionGate, "Rule %s: keeping startup taint: %s", rl.Name, d.Reason)
	log.FromContext(ctx).Info("Node timed out, keeping taint", "node", klog.KObj(node), "rule", rl.Name, "reason", d.Reason)
}

// track returns the rule's state on the node and, when the rule holds the node (holds),
// records that, with the Held (dry run: WouldHold) event the first time. A continuous rule
// holding a node again says so with its Retainted event instead.
func (r *Reconciler) track(ctx context.Context, node *corev1.Node, rl *rule.Rule, holds bool) *ruleState {
	r.mu.Lock()
	rs := r.ruleStateLocked(node, rl)
	first := holds && !rs.held
	rs.held = rs.held || holds
	if first && !rl.DryRun {
		rs.heldSince = r.Clock.Now()
	}
	r.mu.Unlock()
	if !first {
		return rs
	}
	gatedNodes.WithLabelValues(rl.Name).Inc()
	if rl.Completed(node) && !rl.DryRun {
		return rs
	}
	if rl.DryRun {
		dryRunTotal.WithLabelValues(rl.Name, "would_hold").Inc()
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonWouldHold, eventActionGate, "Rule %s (dry run): would hold node with taint %s until its requirements hold", rl.Name, rl.Taint.Key)
		log.FromContext(ctx).Info("Dry run: would hold node", "node", klog.KObj(node), "rule", rl.Name)
		return rs
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonHeld, eventActionGate, "Rule %s: holding node with taint %s until its requirements hold", rl.Name, rl.Taint.Key)
	log.FromContext(ctx).Info("Holding node", "node", klog.KObj(node), "rule", rl.Name)
	return rs
}

// reportBlocked says once per node and rule, with a Warning event on the node, that a
// component the rule waits for cannot land there: a taint of the node its DaemonSet does
// not tolerate (a GPU pool's, a dedicated pool's). Left alone, the node waits for maxHold.
func (r *Reconciler) reportBlocked(ctx context.Context, node *corev1.Node, rl *rule.Rule, rs *ruleState, blocked map[string]string) {
	r.mu.Lock()
	first := !rs.blocked
	rs.blocked = true
	r.mu.Unlock()
	if !first {
		return
	}
	for _, comp := range slices.Sorted(maps.Keys(blocked)) {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonComponentBlocked, eventActionGate,
			"Rule %s: component %q cannot land on the node: %s; the node is held until the DaemonSet tolerates it or maxHold", rl.Name, comp, blocked[comp])
		log.FromContext(ctx).Info("Component cannot land on the node", "node", klog.KObj(node), "rule", rl.Name, "component", comp, "why", blocked[comp])
	}
}

// ruleStateLocked is the rule's entry on the node, new if there is none yet.
func (r *Reconciler) ruleStateLocked(node *corev1.Node, rl *rule.Rule) *ruleState {
	st := r.stateLocked(node)
	rs, ok := st.rules[rl.Name]
	if !ok {
		rs = &ruleState{}
		st.rules[rl.Name] = rs
	}
	return rs
}

// stateLocked is the node's entry, new if the node is new (or was replaced).
func (r *Reconciler) stateLocked(node *corev1.Node) *nodeState {
	if r.nodes == nil {
		r.nodes = map[string]*nodeState{}
	}
	st, ok := r.nodes[node.Name]
	if !ok || st.uid != string(node.UID) {
		if ok {
			r.dropLocked(st)
		}
		st = &nodeState{uid: string(node.UID), rules: map[string]*ruleState{}}
		r.nodes[node.Name] = st
	}
	return st
}

// unhold: the rule no longer holds the node (released, or out of its reach).
func (r *Reconciler) unhold(name string, rl *rule.Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.nodes[name]; ok {
		if rs, ok := st.rules[rl.Name]; ok && rs.held && !rl.DryRun {
			rs.held, rs.timedOut, rs.heldSince = false, false, time.Time{}
			gatedNodes.WithLabelValues(rl.Name).Dec()
		}
	}
}

// unmet is when the rule's requirements were first seen failing on the node, or zero.
func (r *Reconciler) unmet(st *ruleState) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.unmetSince
}

// noteMet starts or clears the unmet clock of a continuous rule.
func (r *Reconciler) noteMet(st *ruleState, d rule.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case d.Met || d.Taint:
		st.unmetSince = time.Time{}
	case st.unmetSince.IsZero():
		st.unmetSince = r.Clock.Now()
	}
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	if st, ok := r.nodes[name]; ok {
		r.dropLocked(st)
		delete(r.nodes, name)
	}
	r.mu.Unlock()
	r.replaceMu.Lock()
	r.replacing.forget(name)
	r.replaceMu.Unlock()
	r.budgetMu.Lock()
	r.tainting.forget(name)
	r.budgetMu.Unlock()
}

func (r *Reconciler) dropLocked(st *nodeState) {
	for name, rs := range st.rules {
		if rs.held {
			gatedNodes.WithLabelValues(name).Dec()
		}
		if rs.state != "" {
			nodeStates.WithLabelValues(name, string(rs.state)).Dec()
		}
	}
}

// NodeChanged filters Node updates down to those that can change a decision: taints,
// labels, annotations, or the conditions a rule reads. Status heartbeats are the bulk of
// Node updates and can be dropped.
func (r *Reconciler) NodeChanged(old, cur *corev1.Node) bool {
	return nodeChanged(r.Config, old, cur)
}

// nodeChanged is the pure part of Reconciler.NodeChanged. It runs on every update of every
// Node, a kubelet's status report included, so the label and annotation maps are compared
// with maps.Equal (nil and empty alike, as equality.Semantic has it) rather than by
// reflection, which cost a cloud node's 44 labels several times as much.
func nodeChanged(cfg *config.Config, old, cur *corev1.Node) bool {
	if !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		!maps.Equal(old.Labels, cur.Labels) ||
		!maps.Equal(old.Annotations, cur.Annotations) ||
		old.UID != cur.UID || old.Status.NodeInfo.BootID != cur.Status.NodeInfo.BootID {
		return true
	}
	for _, rl := range cfg.EffectiveRules() {
		for _, t := range rl.ConditionTypes() {
			if conditionStatus(old, t) != conditionStatus(cur, t) {
				return true
			}
		}
	}
	return false
}

func conditionStatus(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	if c := rule.NodeCondition(n, t); c != nil {
		return c.Status
	}
	return ""
}

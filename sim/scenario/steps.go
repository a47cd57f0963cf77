package scenario

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// Step is one timeline entry: at an offset from the start, exactly one action.
type Step struct {
	// At is when the step runs, as an offset from the start of the run.
	At time.Duration `yaml:"at"`
	// AfterBound holds the step, once At has passed, until every workload replica asked for
	// so far is bound. A fault meant to strike placed workloads (an agent that flaps under
	// running Pods) must not race the scheduler: a Pod that failed while every node was
	// tainted waits out the scheduler's backoff (up to 10 s), and under load can be bound
	// only once the fault has begun. The fault's window in the report is still the plan,
	// from At. AfterBound steps keep their timeline order: each also waits for the one
	// before it to finish, so two held past their offsets do not run at once.
	AfterBound bool `yaml:"afterBound"`
	// AfterReleased holds the step, once At has passed, until every gated node that has
	// joined is released. Every workload replica being bound does not imply it: under a
	// slow plane the replicas fit on the nodes released first, and a reboot meant for
	// released nodes would strike one still held. A node never released holds the step
	// until the run ends. It keeps the AfterBound steps' order.
	AfterReleased bool `yaml:"afterReleased"`
	// AfterRegated holds the step, once At has passed, until every node of the last reboot
	// step before it carries a gating rule's taint again: a step meant for re-gated nodes
	// (an edit of the rule, a second reboot) must not strike before the re-gate. It keeps
	// the AfterBound steps' order.
	AfterRegated bool        `yaml:"afterRegated"`
	Join         *Join       `yaml:"join"`
	Reregister   *Reregister `yaml:"reregister"`
	// Scale sets a workload's replicas (workloads that arrive after the nodes).
	Scale *Scale `yaml:"scale"`
	// NodeDelete deletes a node and the Pods bound to it.
	NodeDelete *NodeDelete `yaml:"nodeDelete"`
	// Relabel changes a node's labels, e.g. to move it out of a rule's selector.
	Relabel *Relabel `yaml:"relabel"`
	// InitPod changes an init DaemonSet's Pods after their timeline: an agent that
	// becomes unready, recovers, is deleted, or flaps.
	InitPod *InitPod `yaml:"initPod"`
	// NodeCondition sets or clears a node condition, as a termination handler or
	// node-problem-detector would.
	NodeCondition *NodeCondition `yaml:"nodeCondition"`
	// KubeletStop stops a node's fake kubelet: no heartbeat, no Pod status. The node lifecycle
	// controller then marks it NotReady, as it would a preempted spot node.
	KubeletStop *KubeletStop `yaml:"kubeletStop"`
	// Reboot reboots nodes: a new boot ID, then every init Pod on them unready and ready
	// again on the init timeline.
	Reboot *Reboot `yaml:"reboot"`
	// SuspendRule restarts the gate with a rule suspended, and again with it resumed.
	SuspendRule *SuspendRule `yaml:"suspendRule"`
	// EditRule restarts the gate with one rule changed: an operator's edit of its config.
	EditRule *EditRule `yaml:"editRule"`
	// PauseAutoscaler stops the autoscaler at the next Node it creates, before it can
	// register that Node, and continues it later.
	PauseAutoscaler *PauseAutoscaler `yaml:"pauseAutoscaler"`
	// Faults.
	WebhookOutage       *WebhookOutage    `yaml:"webhookOutage"`
	WebhookLatency      *WebhookLatency   `yaml:"webhookLatency"`
	GateCrash           *GateCrash        `yaml:"gateCrash"`
	CrashAtWrite        *CrashAtWrite     `yaml:"crashAtWrite"`
	WatchDelay          *WatchDelay       `yaml:"watchDelay"`
	LeaderFailover      *LeaderFailover   `yaml:"leaderFailover"`
	TaintWriters        *TaintWriters     `yaml:"taintWriters"`
	APIServerRestart    *APIServerRestart `yaml:"apiserverRestart"`
	WatchDrops          *WatchDrops       `yaml:"watchDrops"`
	DeleteInitDaemonSet *DeleteDaemonSet  `yaml:"deleteInitDaemonSet"`
	BypassPods          *BypassPods       `yaml:"bypassPods"`
}

// Actions lists the actions a step holds; validation requires exactly one. It is the one
// list of step kinds: a kind added to Step and not here is never valid, so it cannot be
// accepted and then silently not run (and the runner's dispatch is tested against it).
func (s *Step) Actions() []any {
	var acts []any
	for _, a := range []any{s.Join, s.Reregister, s.Scale, s.NodeDelete, s.Relabel, s.InitPod, s.NodeCondition, s.KubeletStop, s.Reboot, s.SuspendRule, s.EditRule, s.PauseAutoscaler, s.WebhookOutage, s.WebhookLatency,
		s.GateCrash, s.CrashAtWrite, s.WatchDelay, s.LeaderFailover, s.TaintWriters, s.APIServerRestart, s.WatchDrops, s.DeleteInitDaemonSet, s.BypassPods} {
		if !reflect.ValueOf(a).IsNil() {
			acts = append(acts, a)
		}
	}
	return acts
}

// Action is the step's one action (a pointer to one of the action types), or nil.
func (s *Step) Action() any {
	if acts := s.Actions(); len(acts) == 1 {
		return acts[0]
	}
	return nil
}

// CoreTaints are the join's registered taints in Kubernetes form.
func (j *Join) CoreTaints() []corev1.Taint {
	out := make([]corev1.Taint, 0, len(j.Taints))
	for _, t := range j.Taints {
		out = append(out, t.Core())
	}
	return out
}

// Scale sets a workload's replica count.
type Scale struct {
	// Workload names one of the scenario's Deployments.
	Workload string `yaml:"workload"`
	// Replicas is the new replica count.
	Replicas int32 `yaml:"replicas"`
}

// Relabel sets labels on a joined node; a null value removes the label.
type Relabel struct {
	// Node is the full name (<scenario>-<prefix><i>) of a node joined before the step.
	Node string `yaml:"node"`
	// Labels to set on the node; a null value removes the label.
	Labels map[string]*string `yaml:"labels"`
}

// InitPod changes the Pods of init DaemonSet Name on Nodes (every node when empty).
type InitPod struct {
	// Name is the init DaemonSet whose Pods change.
	Name string `yaml:"name"`
	// Nodes are the full names of the nodes whose Pods change (every node when empty).
	Nodes []string `yaml:"nodes"`
	// State: unready, ready, delete (the DaemonSet creates a new Pod, which follows the
	// timeline again), or flap (unready and ready in turn, Every, for Duration; then ready).
	State string `yaml:"state"`
	// Every is how often a flapping Pod turns unready or ready.
	Every time.Duration `yaml:"every"`
	// Duration is how long a flap lasts.
	Duration time.Duration `yaml:"duration"`
}

// NodeRef names the nodes a step acts on: Nodes by name, or PodNode, the node the named
// Pod of the scenario's namespace is bound to when the step runs.
type NodeRef struct {
	// Nodes are full node names, each joined before the step.
	Nodes []string `yaml:"nodes"`
	// PodNode names a Pod of the scenario's namespace: the step acts on its node.
	PodNode string `yaml:"podNode"`
}

// NodeCondition sets condition Type to Status (with Reason) on the nodes, or removes it
// when Clear is set.
type NodeCondition struct {
	NodeRef `yaml:",inline"`
	// Type of the condition, e.g. the one a termination handler sets.
	Type string `yaml:"type"`
	// Status to set: True, False or Unknown (empty with Clear).
	Status string `yaml:"status"`
	// Reason recorded with the condition.
	Reason string `yaml:"reason"`
	// Clear removes the condition instead of setting it.
	Clear bool `yaml:"clear"`
}

// KubeletStop stops the fake kubelet of the nodes.
type KubeletStop struct {
	NodeRef `yaml:",inline"`
}

// Reboot reboots the nodes, as a real kubelet reports it: a new status.nodeInfo.bootID
// first, then every container restarted. Init Pods turn unready and ready again on their
// DaemonSet's timeline (a delay drawn afresh for each boot); workload Pods keep running.
// The Node keeps its name and UID: no CREATE, so admission does not run.
type Reboot struct {
	NodeRef `yaml:",inline"`
}

// SuspendRule suspends a gate rule for For, as an operator does during an incident: the
// gate restarts with suspend: true on the rule (the ConfigMap edit rolls its Pods), and
// after For restarts again without it. The gate must write no Node in between.
type SuspendRule struct {
	// Rule names the gate rule to suspend.
	Rule string `yaml:"rule"`
	// For is how long the rule stays suspended.
	For time.Duration `yaml:"for"`
	// Unchanged restarts the gate both times without changing the rule, so that it goes on
	// writing: the negative control of the no-write invariant.
	Unchanged bool `yaml:"unchanged"`
}

// EditRule changes one rule of the gate's config while the gate holds, releases or
// re-gates nodes, as an operator's edit of the gate's ConfigMap does: every replica stops
// before any starts again with the changed config. From the edit on, the run is judged by
// the rules in force. With For, the edit is undone after it. At least one change is set.
type EditRule struct {
	// Rule names the gate rule to change, as the config in force names it.
	Rule string `yaml:"rule"`
	// OnReboot sets the rule's onReboot: ignore or gate.
	OnReboot string `yaml:"onReboot"`
	// Suspend sets or clears the rule's suspend.
	Suspend *bool `yaml:"suspend"`
	// DryRun sets or clears the rule's dryRun.
	DryRun *bool `yaml:"dryRun"`
	// Remove takes the rule out of the config.
	Remove bool `yaml:"remove"`
	// Rename gives the rule a new name (its completion annotation follows the name).
	Rename string `yaml:"rename"`
	// TaintKey gives the rule's taint a new key.
	TaintKey string `yaml:"taintKey"`
	// NodeSelector replaces the rule's node selector (the scenario's own scope is kept).
	NodeSelector *string `yaml:"nodeSelector"`
	// MaxHold sets the rule's maxHold.
	MaxHold *time.Duration `yaml:"maxHold"`
	// TimeoutPolicy sets the rule's timeoutPolicy (release, keep or replace); away from
	// replace, the replacement budget's fields are cleared with it.
	TimeoutPolicy string `yaml:"timeoutPolicy"`
	// Effect gives the rule's taint a new effect.
	Effect string `yaml:"effect"`
	// Mode switches the rule to startup or continuous (to continuous, onReboot goes back to
	// ignore, which only a startup rule may leave).
	Mode string `yaml:"mode"`
	// Components replaces the rule's components.
	Components []rule.Component `yaml:"components"`
	// Add adds a rule of this name beside Rule: a copy of it, its taint key with "-added"
	// appended. Undone, it is removed again.
	Add string `yaml:"add"`
	// For, if set, is how long the edit lasts before it is undone.
	For time.Duration `yaml:"for"`
}

// PauseAutoscaler stops Karpenter (SIGSTOP) inside the admission of the next Node CREATE of
// the scenario's NodePool, so that the Node exists and Karpenter, stopped before it hears
// back, has not registered it; after For it continues, and registers the Node then. That
// is a Karpenter that hangs or restarts between a node's creation and its registration.
type PauseAutoscaler struct {
	// For is how long Karpenter stays stopped after the Node's CREATE.
	For time.Duration `yaml:"for"`
}

// InitPod states.
const (
	InitPodUnready = "unready"
	InitPodReady   = "ready"
	InitPodDelete  = "delete"
	InitPodFlap    = "flap"
)

// NodeDelete removes a node as a scale-down would.
type NodeDelete struct {
	// Node is the full name of a node joined before the step.
	Node string `yaml:"node"`
}

// WebhookOutage makes the webhook refuse connections (mode refuse, the default) or accept
// and never answer (mode hang) for Duration.
type WebhookOutage struct {
	// Duration of the outage.
	Duration time.Duration `yaml:"duration"`
	// Mode is refuse (default: connections refused) or hang (accepted, never answered).
	Mode string `yaml:"mode"`
}

// WebhookLatency delays every admission call by Latency for Duration.
type WebhookLatency struct {
	// Latency added to every admission call.
	Latency time.Duration `yaml:"latency"`
	// Duration is how long the latency lasts.
	Duration time.Duration `yaml:"duration"`
}

// GateCrash kills the leading gate process with SIGKILL and restarts it after RestartAfter.
type GateCrash struct {
	// RestartAfter is how long the gate stays down.
	RestartAfter time.Duration `yaml:"restartAfter"`
	// All kills every replica, not only the leader: a bad upgrade, a zone outage, every
	// node the gate ran on replaced. The webhook answers no one until they are back.
	All bool `yaml:"all"`
}

// CrashAtWrite kills the in-process gate just before (the write is lost) or just after its
// Write-th Node write from the step on, and starts it again RestartAfter later: a crash
// point, as the explorer (sim/explore) places one at every write of a run in turn.
type CrashAtWrite struct {
	// Write counts the gate's Node write attempts from the step (1: the next one).
	Write int `yaml:"write"`
	// After kills the gate once the write has been answered, instead of before it is sent.
	After bool `yaml:"after"`
	// RestartAfter is how long the gate stays down.
	RestartAfter time.Duration `yaml:"restartAfter"`
	// Matching, if set, counts only the writes whose body holds it (an annotation key, such
	// as a rule's _replaced mark), so that the crash falls on one kind of write whatever
	// the run's timing.
	Matching string `yaml:"matching"`
}

// WatchDelay makes the in-process gate's watches of Resource (nodes or pods) deliver every
// event that arrives within For Delay late: the gate decides on a stale view meanwhile.
type WatchDelay struct {
	// Resource is nodes or pods.
	Resource string `yaml:"resource"`
	// Delay is how late each event arrives.
	Delay time.Duration `yaml:"delay"`
	// For is how long events are delayed.
	For time.Duration `yaml:"for"`
}

// LeaderFailover kills the leader of a multi-replica gate; the other must take over. It is
// restarted after RestartAfter (0: not restarted).
type LeaderFailover struct {
	// RestartAfter is how long until the killed leader starts again (0: never).
	RestartAfter time.Duration `yaml:"restartAfter"`
}

// TaintWriters runs Writers foreign controllers that add and remove their own taints on the
// scenario's nodes every Interval for Duration, with ordinary read-modify-write updates.
type TaintWriters struct {
	// Writers is how many foreign controllers write.
	Writers int `yaml:"writers"`
	// Interval is how often each writer adds or removes its taint on a random node.
	Interval time.Duration `yaml:"interval"`
	// Duration is how long they write.
	Duration time.Duration `yaml:"duration"`
	// Unguarded makes the writers misbehave: they write a stale copy of the node without
	// its resourceVersion, so they erase each other's taints — the negative control of
	// the foreign-taint invariant.
	Unguarded bool `yaml:"unguarded"`
}

// APIServerRestart kills kube-apiserver and starts it again with the same flags and certs
// (embedded backend only). Every watch breaks; every client must re-list.
type APIServerRestart struct {
	// Down is how long kube-apiserver stays stopped.
	Down time.Duration `yaml:"down"`
}

// WatchDrops cuts every connection between the gate and the apiserver every Every for
// Duration, so its watches end and its informers re-list.
type WatchDrops struct {
	// Every is the time between two cuts.
	Every time.Duration `yaml:"every"`
	// Duration is how long the cuts go on.
	Duration time.Duration `yaml:"duration"`
}

// DeleteDaemonSet deletes an init DaemonSet and its Pods.
type DeleteDaemonSet struct {
	// Name of the init DaemonSet to delete.
	Name string `yaml:"name"`
}

// BypassPods creates Count Pods with spec.nodeName set to nodes that still hold the startup
// taint: they skip the scheduler, so only the Pod guard can stop them.
type BypassPods struct {
	// Count is how many Pods to create.
	Count int `yaml:"count"`
}

// Join registers Count nodes named <scenario>-<prefix><i>.
type Join struct {
	// Count is how many nodes join.
	Count int `yaml:"count"`
	// Prefix goes between the scenario's name and each node's index in the node names.
	Prefix string `yaml:"prefix"`
	// Interval between joins; 0 is a burst (all at once).
	Interval time.Duration `yaml:"interval"`
	// Labels are added to each node at registration, e.g. to match a rule's or an init
	// DaemonSet's selector.
	Labels map[string]string `yaml:"labels"`
	// Taints registered with the node, as kubelet --register-with-taints or Karpenter would.
	Taints []Taint `yaml:"taints"`
	// GatePool marks these nodes as the pool the gate's own replicas run on (the nodes its
	// exclude names): each must register whatever state the gate is in, or a gate whose
	// replicas are all gone could never come back. A refused registration is a violation
	// (gate-pool-refused).
	GatePool bool `yaml:"gatePool"`
	// ReadyAfter is how long the fake kubelet takes to report the node Ready (default 200ms).
	ReadyAfter time.Duration `yaml:"readyAfter"`
}

// Reregister deletes a node and registers it again under the same name.
type Reregister struct {
	// Node is the full name of a node joined before the step.
	Node string `yaml:"node"`
	// KeepOldInitPod leaves the old node's init Pod bound and Ready, as when pod GC lags.
	KeepOldInitPod bool `yaml:"keepOldInitPod"`
}

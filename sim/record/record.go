package record

import (
	"sort"
	"time"
)

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
	// Reboots are the node's reboots: each new boot ID the kubelet reported after the first.
	Reboots []Reboot
	// Replacing is the first version seen with a rule's mark of a replacement (timeoutPolicy
	// replace: the gate deletes the node's NodeClaim), and ReplacingRule that rule's name.
	Replacing     Mark
	ReplacingRule string
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

// BypassLabel marks the Pods the simulator creates with spec.nodeName set.
const BypassLabel = "sim.startupgate.io/bypass"

// Binding is a Pod seen bound to a node.
type Binding struct {
	Pod       string // namespace/name
	Mark      Mark
	Tolerates bool // tolerates the gate taint (DaemonSet agents, init Pods)
	Init      bool
	// Bypass: a Pod the simulator created bound (BypassLabel), past the scheduler: the Pod
	// guard is all that stands between it and a held node.
	Bypass bool
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

// ReadyMoment is when the node became ready for release purposes: the last accepted ready
// write at or before the release, else the watch-observed InitReady. A gate can release
// before the fake kubelet's client has returned from the write that made the last init Pod
// ready (the watch is faster than the response): that write is then after the release, and
// the last one before it made an earlier Pod ready. InitReady, when the recorder saw every
// init Pod Ready, comes after that one then, and is the moment (or, after the release too,
// leaves the node out of the latency figures, as a node with no accepted write is).
func (rec *NodeRecord) ReadyMoment() time.Time {
	var best time.Time
	for _, t := range rec.ReadyAccepted {
		if !t.After(rec.Released.Time) && t.After(best) {
			best = t
		}
	}
	if ir := rec.InitReady.Time; best.IsZero() || ir.After(best) {
		return ir
	}
	return best
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

// Workload reports whether the Pod is a workload's: neither an init Pod nor a Pod
// tolerating the startup taint.
func (b Binding) Workload() bool { return !b.Tolerates && !b.Init }

// Sort orders records by creation (etcd revision), then name.
func Sort(recs []NodeRecord) {
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Created.RV != recs[j].Created.RV {
			return recs[i].Created.RV < recs[j].Created.RV
		}
		return recs[i].Name < recs[j].Name
	})
}

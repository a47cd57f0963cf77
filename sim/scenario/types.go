package scenario

import (
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Plane is what a scenario changes in the embedded plane. The controller-manager restarts
// with it for the scenario and with the defaults after.
type Plane struct {
	// NodeMonitorGracePeriod is how long the node lifecycle controller waits for a node's
	// heartbeat before it marks the node NotReady (Unknown). The fake kubelet renews every
	// quarter of it, so that live nodes stay Ready.
	NodeMonitorGracePeriod time.Duration `yaml:"nodeMonitorGracePeriod"`
}

// KubeletSettings are the fields of a kubelet's configuration the fake kubelet honours.
type KubeletSettings struct {
	// NodeStatusReportFrequency is how often each Ready node reports its status though
	// nothing changed. A real kubelet's default is 5m, longer than any run; unset, the fake
	// kubelet reports once. A scenario that can make the node-lifecycle controller's taint
	// write fail (an apiserver restart) needs it: that controller does not retry the write
	// until the Node is next updated.
	NodeStatusReportFrequency time.Duration `yaml:"nodeStatusReportFrequency"`
}

// GateProcess is the process-mode gate.
type GateProcess struct {
	// Replicas is how many gate processes run (default 1); leaderFailover needs 2 or more.
	Replicas int `yaml:"replicas"`
}

// WebhookSettings override fields of deploy/base/webhook.yaml for a scenario.
type WebhookSettings struct {
	// FailurePolicy is Fail or Ignore (default: the shipped Fail).
	FailurePolicy string `yaml:"failurePolicy"`
	// TimeoutSeconds is how long the apiserver waits for the webhook (0: the shipped value).
	TimeoutSeconds int32 `yaml:"timeoutSeconds"`
}

// InitDaemonSet is a required init component and how its Pods behave on the fake kubelet.
type InitDaemonSet struct {
	// Name names the DaemonSet and its component (required); initPod and
	// deleteInitDaemonSet steps refer to it.
	Name string `yaml:"name"`
	// Labels of its Pods; default startup.k8s.io/component=<name>, or =init for the first.
	Labels map[string]string `yaml:"labels"`
	// Tolerate the startup taint (default true). false reproduces the deadlock that the
	// gate must report.
	Tolerate *bool `yaml:"tolerate"`
	// Tolerations are more tolerations of its Pods, e.g. {operator: Exists}, which many node
	// agents carry: such a Pod also runs on a node that another component still taints
	// (Karpenter's karpenter.sh/unregistered, until it registers the node).
	Tolerations []Toleration `yaml:"tolerations"`
	// NodeSelector restricts it to some of the scenario's nodes.
	NodeSelector map[string]string `yaml:"nodeSelector"`
	// Ready is how its Pods become ready once bound (default: mode ready, at once).
	Ready PodTimeline `yaml:"ready"`
	// NeverOnFirst: its Pods on the first this many nodes to run one never turn Ready (a
	// warm-up that fails for good: a GPU that never initialises), whatever Ready says; on
	// every later node they follow Ready. Which nodes come first depends on the run; how
	// many does not, so an autoscaler's replacements of them warm.
	NeverOnFirst int `yaml:"neverOnFirst"`
	// Continuous says that the component must stay ready after the node's release: a
	// workload Pod bound while it is not is a violation (bound-while-unready). It is the
	// simulator's ground truth, whatever mode the gate's rule has.
	Continuous bool `yaml:"continuous"`
}

// PodTimeline is how an init Pod behaves once bound.
type PodTimeline struct {
	// Mode: ready (default), never, crashloop, annotate (sets the early-ready annotation
	// without becoming Ready), flap (ready, then not ready, then ready again).
	Mode string `yaml:"mode"`
	// After is how long after the Pod is bound it turns ready (or crash-loops, or is
	// annotated).
	After time.Duration `yaml:"after"`
	// Jitter spreads After over After ± Jitter, per node, drawn from the run's seed; at
	// most After.
	Jitter time.Duration `yaml:"jitter"`
	// Flaps is how many ready/not-ready cycles flap mode makes before staying Ready; the
	// cycle length is After.
	Flaps int `yaml:"flaps"`
}

// Workload kinds.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// Pod timeline modes.
const (
	ModeReady     = "ready"
	ModeNever     = "never"
	ModeCrashLoop = "crashloop"
	ModeAnnotate  = "annotate"
	ModeFlap      = "flap"
)

// DaemonSet is a non-required DaemonSet; its Pods go Running and Ready at once.
type DaemonSet struct {
	// Name of the DaemonSet.
	Name string `yaml:"name"`
	// Tolerations of its Pods; tolerating the startup taint lets them land before release.
	Tolerations []Toleration `yaml:"tolerations"`
}

// Workload is a Deployment (or a StatefulSet) of pause Pods pinned to the scenario's nodes.
type Workload struct {
	// Name of the workload; scale steps refer to it.
	Name string `yaml:"name"`
	// Kind is Deployment (default) or StatefulSet. A StatefulSet's Pods keep their names and
	// have a grace period, as a database's would: one on a dead node stays Terminating, and
	// its replacement waits, until the Pod is force-deleted.
	Kind string `yaml:"kind"`
	// Replicas asked for at creation, before the first node joins; scale changes it later.
	Replicas int32 `yaml:"replicas"`
	// CPU request per Pod (default 100m).
	CPU string `yaml:"cpu"`
	// Tolerations of its Pods; tolerating the startup taint lets them land before release.
	Tolerations []Toleration `yaml:"tolerations"`
}

// Toleration mirrors corev1.Toleration in scenario YAML.
type Toleration struct {
	// Key is the taint key tolerated; empty with operator Exists tolerates every taint.
	Key string `yaml:"key"`
	// Operator is Equal (the Kubernetes default) or Exists.
	Operator string `yaml:"operator"`
	// Value must equal the taint's value when Operator is Equal.
	Value string `yaml:"value"`
	// Effect is the taint effect tolerated; empty tolerates every effect.
	Effect string `yaml:"effect"`
}

// Taint mirrors corev1.Taint in scenario YAML.
type Taint struct {
	// Key of the taint.
	Key string `yaml:"key"`
	// Value of the taint (may be empty).
	Value string `yaml:"value"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	Effect string `yaml:"effect"`
}

// Core is the Kubernetes form.
func (t Toleration) Core() corev1.Toleration {
	return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
}

// Core is the Kubernetes form.
func (t Taint) Core() corev1.Taint {
	return corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
}

// Expect is what a run must show to pass.
type Expect struct {
	// Violations: "none" (default) or "some" (a negative control).
	Violations string `yaml:"violations"`
	// Kinds that must appear when Violations is "some".
	Kinds []string `yaml:"kinds"`
	// RetaintWithin bounds how long after a continuous rule's requirement stopped holding
	// on a released node its taint is back (0: not judged).
	RetaintWithin time.Duration `yaml:"retaintWithin"`
	// ReleasedWithin bounds how long after a node could be released — its init Pods
	// ready, or its max hold over — the gate releases it (default: no bound beyond Timeout).
	ReleasedWithin time.Duration `yaml:"releasedWithin"`
	// Stuck is the number of gated nodes expected never to be released (default 0).
	Stuck int `yaml:"stuck"`
	// AtLeast sets lower bounds on counters of the run.
	AtLeast Counters `yaml:"atLeast"`
	// Events are reasons that must have been recorded (e.g. StartupGateMissingToleration).
	Events []string `yaml:"events"`
	// EventsMatch pairs reasons that must have been recorded equally often, at least once:
	// a dry-run rule's WouldHold as often as the real rule's Held.
	EventsMatch []EventMatch `yaml:"eventsMatch"`
	// WritesPerRelease, if set, is how many Node writes the gate may make per rule release
	// (counted at the gate's own client; in-process gate only).
	WritesPerRelease int `yaml:"writesPerRelease"`
	// ConditionTaint is the simulator's ground truth of a condition rule: the taint, and the
	// conditions that alone may put it on. It is judged against the taints the nodes carry,
	// whatever the gate's config says.
	ConditionTaint *ConditionTaint `yaml:"conditionTaint"`
	// MaxEvictions bounds the Pods evicted by the taint-eviction controller (nil: not judged).
	MaxEvictions *int `yaml:"maxEvictions"`
	// ReplacementWithin bounds how long after a node's kubelet stops its StatefulSet Pods
	// run again elsewhere (0: not judged).
	ReplacementWithin time.Duration `yaml:"replacementWithin"`
	// NodeClaims is how many NodeClaims the autoscaler may create: the arithmetic of the
	// scenario (Pods per node from the instance type), never read from the autoscaler. More
	// is a nodeclaims-redundant violation; 0: not judged.
	NodeClaims int `yaml:"nodeClaims"`
	// Replaced is exactly how many nodes the gate marks for replacement (timeoutPolicy
	// replace; nil: not judged).
	Replaced *int `yaml:"replaced"`
	// Window is how long the run keeps watching after its last step before it may settle:
	// condition taints, evictions and replacements happen after the steps that cause them.
	// A run whose StatefulSet Pods have all been replaced settles before it ends.
	Window time.Duration `yaml:"window"`
}

// Autoscaler is the real autoscaler that creates the scenario's nodes.
type Autoscaler struct {
	// Karpenter runs Karpenter's KWOK provider with one NodePool, named after the scenario,
	// whose nodes carry the scenario's label. Its Nodes come from Karpenter's own CREATE,
	// and the fake kubelet adopts them.
	Karpenter *Karpenter `yaml:"karpenter"`
}

// Karpenter is the NodePool and the instance types of a Karpenter scenario.
type Karpenter struct {
	// StartupTaints of the NodePool: taints Karpenter expects on a new node, ignores when it
	// decides whether pending Pods fit, and writes onto the Node when it registers it. A
	// gating taint left out (and not under readiness.k8s.io/) counts as permanent.
	StartupTaints []Taint `yaml:"startupTaints"`
	// Taints of the NodePool: permanent taints of its nodes.
	Taints []Taint `yaml:"taints"`
	// Consolidation is the NodePool's disruption policy; by default Karpenter never
	// consolidates.
	Consolidation Consolidation `yaml:"consolidation"`
	// InstanceTypes are the only types Karpenter may launch (at least one). Karpenter keeps
	// 100m CPU of each for the kubelet.
	InstanceTypes []InstanceType `yaml:"instanceTypes"`
}

// Consolidation is a NodePool's disruption policy.
type Consolidation struct {
	// Policy is WhenEmpty or WhenEmptyOrUnderutilized (the default).
	Policy string `yaml:"policy"`
	// After is how long a node must be consolidatable before Karpenter acts; 0: never.
	After time.Duration `yaml:"after"`
}

// InstanceType is one type Karpenter may launch.
type InstanceType struct {
	// Name, e.g. c-5x-amd64-linux.
	Name string `yaml:"name"`
	// CPU and Memory of a node of this type, as Kubernetes quantities.
	CPU    string `yaml:"cpu"`
	Memory string `yaml:"memory"`
	// Pods is a node's Pod capacity (default 110).
	Pods int `yaml:"pods"`
}

// ConditionTaint is a taint that is on a node exactly while every condition in While matches
// (anchored status regexes), within Within; at most MaxTainted nodes carry it at once (0:
// not judged). Keep: the taint may stay after the conditions stop matching.
type ConditionTaint struct {
	// Taint is the condition rule's taint.
	Taint Taint `yaml:"taint"`
	// While are the conditions that must all match for the taint to be on.
	While []ConditionWant `yaml:"while"`
	// Within is how late the taint may follow the conditions, on and off.
	Within time.Duration `yaml:"within"`
	// MaxTainted is how many nodes may carry the taint at once (0: not judged).
	MaxTainted int `yaml:"maxTainted"`
	// Keep lets the taint stay after the conditions stop matching.
	Keep bool `yaml:"keep"`
}

// ConditionWant is a node condition and an anchored regular expression for its status.
type ConditionWant struct {
	// Type of the node condition.
	Type string `yaml:"type"`
	// Status is a regular expression that the condition's whole status must match.
	Status string `yaml:"status"`
}

// Regexp is the status expression, anchored to the whole status.
func (w ConditionWant) Regexp() (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + w.Status + `)$`)
}

// EventMatch says that Reason events number exactly as many as Like events.
type EventMatch struct {
	// Reason of the events counted.
	Reason string `yaml:"reason"`
	// Like is the reason whose events must number as many.
	Like string `yaml:"like"`
}

// Counters are run counters an expectation can bound from below.
type Counters struct {
	// EarlyToleratingPods are Pods that tolerate the startup taint, bound before their
	// node's release.
	EarlyToleratingPods int `yaml:"earlyToleratingPods" json:"early_tolerating_pods"`
	// RegistrationsRefused are node registrations that admission refused.
	RegistrationsRefused int `yaml:"registrationsRefused" json:"registrations_refused"`
	// BypassDenied are bypassPods Pods that the Pod guard denied.
	BypassDenied int `yaml:"bypassDenied" json:"bypass_denied"`
	// BypassCreated are bypassPods Pods that the apiserver accepted.
	BypassCreated int `yaml:"bypassCreated" json:"bypass_created"`
	// Backfilled are nodes that came up untainted and were tainted later.
	Backfilled int `yaml:"backfilled" json:"backfilled"`
}

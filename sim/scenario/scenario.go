package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/config"
)

// Scenario is one scenario file: typed data, strictly decoded. There is no logic in YAML —
// no templates and no scripts; everything a scenario can do is a field here.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Gate overrides the gate's Config, in the same YAML as cmd/gate --config.
	Gate yaml.Node `yaml:"gate"`
	// Admission: webhook (default), policy (the MutatingAdmissionPolicy form), or none: no
	// tainting at CREATE, only the controller's reactive backfill — a controller-only peer.
	Admission string `yaml:"admission"`
	// GateProcess runs the gate as the built cmd/gate binary, leader-elected, with this many
	// replicas — needed to kill it (gateCrash, leaderFailover).
	GateProcess *GateProcess `yaml:"gateProcess"`
	// Webhook adjusts how the shipped webhook configuration is registered.
	Webhook WebhookSettings `yaml:"webhook"`
	// GateStartsAt delays the gate's start (webhook and controller), as when the gate is
	// installed into a cluster whose nodes are already up.
	GateStartsAt time.Duration `yaml:"gateStartsAt"`
	// GateStartsAfterBound holds the late gate, once GateStartsAt has passed, until every
	// workload replica asked for so far is bound, as a step's afterBound does: a scenario
	// about a gate installed among busy nodes must not find them idle because the plane was
	// slow to place Pods (under load, none had been bound by 6 s). Needs GateStartsAt.
	GateStartsAfterBound bool `yaml:"gateStartsAfterBound"`
	// Init lists the required init DaemonSets; empty means one default init DaemonSet
	// labelled startup.k8s.io/component=init that tolerates the taint and is ready after 1s.
	Init []InitDaemonSet `yaml:"init"`
	// DaemonSets are other (non-required) DaemonSets, e.g. tolerating agents that may land early.
	DaemonSets []DaemonSet `yaml:"daemonSets"`
	// Workloads are Deployments created, and left pending, before the first node joins.
	Workloads []Workload `yaml:"workloads"`
	Timeline  []Step     `yaml:"timeline"`
	Expect    Expect     `yaml:"expect"`
	// Timeout bounds the whole run (default 2m); a run that is not settled by then stops and
	// is judged as it stands.
	Timeout time.Duration `yaml:"timeout"`
	// Plane changes the embedded plane's controller-manager for this scenario, which then
	// runs alone (embedded backend only).
	Plane *Plane `yaml:"plane"`
	// Kubelet sets what a real kubelet's configuration would for the fake kubelets.
	Kubelet KubeletSettings `yaml:"kubelet"`

	// File is filled by Load; GateConfig by Parse: the gate's defaults with the gate
	// section applied, validated. A test may adjust it (a negative control turns a
	// protection off) before the scenario runs.
	File       string        `yaml:"-"`
	GateConfig config.Config `yaml:"-"`

	// doc is the file's node tree, kept to name the line of a validation error.
	doc *yaml.Node
}

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
	Replicas int `yaml:"replicas"`
}

// WebhookSettings override fields of deploy/base/webhook.yaml for a scenario.
type WebhookSettings struct {
	FailurePolicy  string `yaml:"failurePolicy"`
	TimeoutSeconds int32  `yaml:"timeoutSeconds"`
}

// InitDaemonSet is a required init component and how its Pods behave on the fake kubelet.
type InitDaemonSet struct {
	Name string `yaml:"name"`
	// Labels of its Pods; default startup.k8s.io/component=<name>, or =init for the first.
	Labels map[string]string `yaml:"labels"`
	// Tolerate the startup taint (default true). false reproduces the deadlock that the
	// gate must report.
	Tolerate *bool `yaml:"tolerate"`
	// NodeSelector restricts it to some of the scenario's nodes.
	NodeSelector map[string]string `yaml:"nodeSelector"`
	Ready        PodTimeline       `yaml:"ready"`
	// Continuous says that the component must stay ready after the node's release: a
	// workload Pod bound while it is not is a violation (bound-while-unready). It is the
	// simulator's ground truth, whatever mode the gate's rule has.
	Continuous bool `yaml:"continuous"`
}

// PodTimeline is how an init Pod behaves once bound.
type PodTimeline struct {
	// Mode: ready (default), never, crashloop, annotate (sets the early-ready annotation
	// without becoming Ready), flap (ready, then not ready, then ready again).
	Mode   string        `yaml:"mode"`
	After  time.Duration `yaml:"after"`
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
	Name        string       `yaml:"name"`
	Tolerations []Toleration `yaml:"tolerations"`
}

// Workload is a Deployment (or a StatefulSet) of pause Pods pinned to the scenario's nodes.
type Workload struct {
	Name string `yaml:"name"`
	// Kind is Deployment (default) or StatefulSet. A StatefulSet's Pods keep their names and
	// have a grace period, as a database's would: one on a dead node stays Terminating, and
	// its replacement waits, until the Pod is force-deleted.
	Kind     string `yaml:"kind"`
	Replicas int32  `yaml:"replicas"`
	// CPU request per Pod (default 100m).
	CPU         string       `yaml:"cpu"`
	Tolerations []Toleration `yaml:"tolerations"`
}

// Toleration mirrors corev1.Toleration in scenario YAML.
type Toleration struct {
	Key      string `yaml:"key"`
	Operator string `yaml:"operator"`
	Value    string `yaml:"value"`
	Effect   string `yaml:"effect"`
}

// Taint mirrors corev1.Taint in scenario YAML.
type Taint struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value"`
	Effect string `yaml:"effect"`
}

// Step is one timeline entry: at an offset from the start, exactly one action.
type Step struct {
	At time.Duration `yaml:"at"`
	// AfterBound holds the step, once At has passed, until every workload replica asked for
	// so far is bound. A fault meant to strike placed workloads (an agent that flaps under
	// running Pods) must not race the scheduler: a Pod that failed while every node was
	// tainted waits out a backoff of up to 10 s, and under load it was bound inside the
	// fault. The fault's window in the report is still the plan, from At.
	AfterBound bool        `yaml:"afterBound"`
	Join       *Join       `yaml:"join"`
	Reregister *Reregister `yaml:"reregister"`
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
	// Faults.
	WebhookOutage       *WebhookOutage    `yaml:"webhookOutage"`
	WebhookLatency      *WebhookLatency   `yaml:"webhookLatency"`
	GateCrash           *GateCrash        `yaml:"gateCrash"`
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
	for _, a := range []any{s.Join, s.Reregister, s.Scale, s.NodeDelete, s.Relabel, s.InitPod, s.NodeCondition, s.KubeletStop, s.WebhookOutage, s.WebhookLatency,
		s.GateCrash, s.LeaderFailover, s.TaintWriters, s.APIServerRestart, s.WatchDrops, s.DeleteInitDaemonSet, s.BypassPods} {
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

// Taints are the join's registered taints in Kubernetes form.
func (j *Join) CoreTaints() []corev1.Taint {
	out := make([]corev1.Taint, 0, len(j.Taints))
	for _, t := range j.Taints {
		out = append(out, t.Core())
	}
	return out
}

// Scale sets a workload's replica count.
type Scale struct {
	Workload string `yaml:"workload"`
	Replicas int32  `yaml:"replicas"`
}

// Relabel sets labels on a joined node; a null value removes the label.
type Relabel struct {
	Node   string             `yaml:"node"`
	Labels map[string]*string `yaml:"labels"`
}

// InitPod changes the Pods of init DaemonSet Name on Nodes (every node when empty).
type InitPod struct {
	Name  string   `yaml:"name"`
	Nodes []string `yaml:"nodes"`
	// State: unready, ready, delete (the DaemonSet creates a new Pod, which follows the
	// timeline again), or flap (unready and ready in turn, Every, for Duration; then ready).
	State    string        `yaml:"state"`
	Every    time.Duration `yaml:"every"`
	Duration time.Duration `yaml:"duration"`
}

// NodeRef names the nodes a step acts on: Nodes by name, or PodNode, the node the named
// Pod of the scenario's namespace is bound to when the step runs.
type NodeRef struct {
	Nodes   []string `yaml:"nodes"`
	PodNode string   `yaml:"podNode"`
}

// NodeCondition sets condition Type to Status (with Reason) on the nodes, or removes it
// when Clear is set.
type NodeCondition struct {
	NodeRef `yaml:",inline"`
	Type    string `yaml:"type"`
	Status  string `yaml:"status"`
	Reason  string `yaml:"reason"`
	Clear   bool   `yaml:"clear"`
}

// KubeletStop stops the fake kubelet of the nodes.
type KubeletStop struct {
	NodeRef `yaml:",inline"`
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
	Node string `yaml:"node"`
}

// WebhookOutage makes the webhook refuse connections (mode refuse, the default) or accept
// and never answer (mode hang) for Duration.
type WebhookOutage struct {
	Duration time.Duration `yaml:"duration"`
	Mode     string        `yaml:"mode"`
}

// WebhookLatency delays every admission call by Latency for Duration.
type WebhookLatency struct {
	Latency  time.Duration `yaml:"latency"`
	Duration time.Duration `yaml:"duration"`
}

// GateCrash kills the leading gate process with SIGKILL and restarts it after RestartAfter.
type GateCrash struct {
	RestartAfter time.Duration `yaml:"restartAfter"`
}

// LeaderFailover kills the leader of a multi-replica gate; the other must take over. It is
// restarted after RestartAfter (0: not restarted).
type LeaderFailover struct {
	RestartAfter time.Duration `yaml:"restartAfter"`
}

// TaintWriters runs Writers foreign controllers that add and remove their own taints on the
// scenario's nodes every Interval for Duration, with ordinary read-modify-write updates.
type TaintWriters struct {
	Writers  int           `yaml:"writers"`
	Interval time.Duration `yaml:"interval"`
	Duration time.Duration `yaml:"duration"`
	// Unguarded makes the writers misbehave: they write a stale copy of the node without
	// its resourceVersion, so they erase each other's taints — the negative control of
	// the foreign-taint invariant.
	Unguarded bool `yaml:"unguarded"`
}

// APIServerRestart kills kube-apiserver and starts it again with the same flags and certs
// (embedded backend only). Every watch breaks; every client must re-list.
type APIServerRestart struct {
	Down time.Duration `yaml:"down"`
}

// WatchDrops cuts every connection between the gate and the apiserver every Every for
// Duration, so its watches end and its informers re-list.
type WatchDrops struct {
	Every    time.Duration `yaml:"every"`
	Duration time.Duration `yaml:"duration"`
}

// DeleteDaemonSet deletes an init DaemonSet and its Pods.
type DeleteDaemonSet struct {
	Name string `yaml:"name"`
}

// BypassPods creates Count Pods with spec.nodeName set to nodes that still hold the startup
// taint: they skip the scheduler, so only the Pod guard can stop them.
type BypassPods struct {
	Count int `yaml:"count"`
}

// Join registers Count nodes named <scenario>-<prefix><i>.
type Join struct {
	Count  int    `yaml:"count"`
	Prefix string `yaml:"prefix"`
	// Interval between joins; 0 is a burst (all at once).
	Interval time.Duration     `yaml:"interval"`
	Labels   map[string]string `yaml:"labels"`
	// Taints registered with the node, as kubelet --register-with-taints or Karpenter would.
	Taints []Taint `yaml:"taints"`
	// ReadyAfter is how long the fake kubelet takes to report the node Ready (default 200ms).
	ReadyAfter time.Duration `yaml:"readyAfter"`
}

// Reregister deletes a node and registers it again under the same name.
type Reregister struct {
	Node string `yaml:"node"`
	// KeepOldInitPod leaves the old node's init Pod bound and Ready, as when pod GC lags.
	KeepOldInitPod bool `yaml:"keepOldInitPod"`
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
	// Window is how long the run keeps watching after its last step before it may settle:
	// condition taints, evictions and replacements happen after the steps that cause them.
	// A run whose StatefulSet Pods have all been replaced settles before it ends.
	Window time.Duration `yaml:"window"`
}

// ConditionTaint: the taint is on a node exactly while every condition in While matches
// (anchored status regexes), within Within; at most MaxTainted nodes carry it at once (0:
// not judged). Keep: the taint may stay after the conditions stop matching.
type ConditionTaint struct {
	Taint      Taint           `yaml:"taint"`
	While      []ConditionWant `yaml:"while"`
	Within     time.Duration   `yaml:"within"`
	MaxTainted int             `yaml:"maxTainted"`
	Keep       bool            `yaml:"keep"`
}

// ConditionWant is a node condition and an anchored regular expression for its status.
type ConditionWant struct {
	Type   string `yaml:"type"`
	Status string `yaml:"status"`
}

// Regexp is the status expression, anchored to the whole status.
func (w ConditionWant) Regexp() (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + w.Status + `)$`)
}

// EventMatch says that Reason events number exactly as many as Like events.
type EventMatch struct {
	Reason string `yaml:"reason"`
	Like   string `yaml:"like"`
}

// Counters are run counters an expectation can bound from below.
type Counters struct {
	EarlyToleratingPods  int `yaml:"earlyToleratingPods" json:"early_tolerating_pods"`
	RegistrationsRefused int `yaml:"registrationsRefused" json:"registrations_refused"`
	BypassDenied         int `yaml:"bypassDenied" json:"bypass_denied"`
	BypassCreated        int `yaml:"bypassCreated" json:"bypass_created"`
	Backfilled           int `yaml:"backfilled" json:"backfilled"`
}

// Load reads and validates one scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	sc.File = path
	return sc, nil
}

// Parse strictly decodes and validates a scenario. Errors start with "LINE: ".
func Parse(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	sc := &Scenario{doc: &yaml.Node{}}
	if err := dec.Decode(sc); err != nil {
		return nil, lineError(err)
	}
	if err := yaml.Unmarshal(data, sc.doc); err != nil { // for the lines of validation errors
		return nil, lineError(err)
	}
	if err := sc.defaultAndValidate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// lineError turns yaml.v3's "yaml: line N: msg" into "N: msg" so callers can prefix a file.
func lineError(err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		return errors.New(rest)
	}
	return errors.New("1: " + msg)
}

// line is the line of the field at path (map keys and sequence indexes) in the scenario
// file, or of the deepest part of it the file has: a missing field is reported at its
// parent. A scenario built in Go has no file; its errors are at line 1.
func (sc *Scenario) line(path ...any) int {
	if sc.doc == nil || len(sc.doc.Content) == 0 {
		return 1
	}
	n := sc.doc.Content[0]
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			break
		}
		n = next
	}
	return n.Line
}

// child is the value under key p of a mapping node, or the p-th item of a sequence node.
func child(n *yaml.Node, p any) *yaml.Node {
	switch p := p.(type) {
	case string:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					return n.Content[i+1]
				}
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && p < len(n.Content) {
			return n.Content[p]
		}
	}
	return nil
}

// at is a validation error at a line of the scenario file.
func at(line int, format string, args ...any) error {
	return fmt.Errorf("%d: %s", line, fmt.Sprintf(format, args...))
}

// defaultAndValidate fills the defaults and rejects what cannot run, one concern at a time.
// Errors start with the line they concern (1 where the field has no line of its own).
func (sc *Scenario) defaultAndValidate() error {
	for _, step := range []func() error{
		sc.validateIdentity, sc.decodeGate, sc.defaultInit, sc.defaultWorkloads, sc.validateTimeline, sc.validateChoices,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if sc.Timeout == 0 {
		sc.Timeout = 2 * time.Minute
	}
	return nil
}

func (sc *Scenario) validateIdentity() error {
	if errs := validation.IsDNS1123Label(sc.Name); len(errs) > 0 || len(sc.Name) > 40 {
		return at(sc.line("name"), "name %q must be a DNS label of at most 40 characters", sc.Name)
	}
	if sc.Description == "" {
		return at(sc.line("description"), "description is required: say which hazard the scenario guards against")
	}
	return nil
}

// decodeGate applies the gate section to the contract's defaults, with the gate's own
// strict decoding and validation: a scenario cannot run a gate cmd/gate would refuse.
func (sc *Scenario) decodeGate() error {
	cfg := config.DefaultConfig()
	if sc.Gate.Kind != 0 {
		raw, err := yaml.Marshal(&sc.Gate)
		if err != nil {
			return at(sc.Gate.Line, "gate: %v", err)
		}
		if cfg, err = config.LoadConfig(raw); err != nil {
			return at(sc.Gate.Line, "gate: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return at(sc.Gate.Line, "gate: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	sc.GateConfig = cfg
	return nil
}

// defaultInit gives a scenario without init DaemonSets the contract's one, and each init
// DaemonSet its labels, toleration and timeline defaults.
func (sc *Scenario) defaultInit() error {
	if len(sc.Init) == 0 {
		sc.Init = []InitDaemonSet{{Name: "init", Ready: PodTimeline{After: time.Second}}}
	}
	for i := range sc.Init {
		in := &sc.Init[i]
		if in.Name == "" {
			return at(sc.line("init", i), "init[%d]: name is required", i)
		}
		if len(in.Labels) == 0 {
			value := in.Name
			if i == 0 {
				value = "init"
			}
			in.Labels = map[string]string{"startup.k8s.io/component": value}
		}
		if in.Tolerate == nil {
			in.Tolerate = ptr.To(true)
		}
		switch in.Ready.Mode {
		case "":
			in.Ready.Mode = ModeReady
		case ModeReady, ModeNever, ModeCrashLoop, ModeAnnotate, ModeFlap:
		default:
			return at(sc.line("init", i, "ready", "mode"), "init[%d].ready.mode %q: want ready, never, crashloop, annotate or flap", i, in.Ready.Mode)
		}
		if in.Ready.Jitter > in.Ready.After {
			return at(sc.line("init", i, "ready", "jitter"), "init[%d].ready.jitter %s must not exceed after %s", i, in.Ready.Jitter, in.Ready.After)
		}
	}
	return nil
}

func (sc *Scenario) defaultWorkloads() error {
	for i := range sc.Workloads {
		w := &sc.Workloads[i]
		if w.Name == "" || w.Replicas < 0 {
			return at(sc.line("workloads", i), "workloads[%d]: name and a non-negative replicas are required", i)
		}
		switch w.Kind {
		case "":
			w.Kind = KindDeployment
		case KindDeployment, KindStatefulSet:
		default:
			return at(sc.line("workloads", i, "kind"), "workloads[%d].kind %q: want Deployment or StatefulSet", i, w.Kind)
		}
		if w.CPU == "" {
			w.CPU = "100m"
		}
		// PodSpec builds the request with resource.MustParse: a value it cannot read must
		// stop here, with its line, not panic in the runner.
		if q, err := resource.ParseQuantity(w.CPU); err != nil || q.Sign() < 0 {
			return at(sc.line("workloads", i, "cpu"), "workloads[%d].cpu %q: want a non-negative quantity such as 100m", i, w.CPU)
		}
	}
	return nil
}

// validateTimeline checks each step against the nodes joined before it, then orders the
// steps by time.
func (sc *Scenario) validateTimeline() error {
	names := map[string]bool{}
	for i := range sc.Timeline {
		s := &sc.Timeline[i]
		if len(s.Actions()) != 1 {
			return at(sc.line("timeline", i), "timeline[%d]: exactly one action per step", i)
		}
		if err := sc.validateNodes(s, names); err != nil {
			return at(sc.line("timeline", i), "timeline[%d].%v", i, err)
		}
		if err := sc.validateFault(s); err != nil {
			return at(sc.line("timeline", i), "timeline[%d]: %v", i, err)
		}
	}
	sort.SliceStable(sc.Timeline, func(a, b int) bool { return sc.Timeline[a].At < sc.Timeline[b].At })
	return nil
}

// maxNodes bounds the nodes a scenario joins, far above what one plane holds (the bench
// goes to a few thousand). Validation names every node it joins, so without a bound a
// mistyped count of a billion would hang Parse and exhaust memory before any error.
const maxNodes = 100_000

// validateNodes checks a step's node names against joined, the names joined so far, and
// adds a join's names to it.
func (sc *Scenario) validateNodes(s *Step, joined map[string]bool) error {
	switch {
	case s.Join != nil:
		if s.Join.Count <= 0 {
			return fmt.Errorf("join.count must be positive")
		}
		if s.Join.Count > maxNodes-len(joined) {
			return fmt.Errorf("join.count %d: a scenario joins at most %d nodes in all", s.Join.Count, maxNodes)
		}
		if s.Join.ReadyAfter == 0 {
			s.Join.ReadyAfter = 200 * time.Millisecond
		}
		for j := 0; j < s.Join.Count; j++ {
			name := sc.NodeName(s.Join.Prefix, j)
			if joined[name] {
				return fmt.Errorf("join: node %s joins twice; use reregister", name)
			}
			joined[name] = true
		}
	case s.Reregister != nil && !joined[s.Reregister.Node]:
		return fmt.Errorf("reregister: node %q has not joined before", s.Reregister.Node)
	case s.NodeDelete != nil && !joined[s.NodeDelete.Node]:
		return fmt.Errorf("nodeDelete: node %q has not joined before", s.NodeDelete.Node)
	case s.Relabel != nil && !joined[s.Relabel.Node]:
		return fmt.Errorf("relabel: node %q has not joined before", s.Relabel.Node)
	case s.Relabel != nil && len(s.Relabel.Labels) == 0:
		return fmt.Errorf("relabel: no labels")
	case s.NodeCondition != nil:
		return s.NodeCondition.validate("nodeCondition", joined)
	case s.KubeletStop != nil:
		return s.KubeletStop.validate("kubeletStop", joined)
	}
	return nil
}

func (r *NodeRef) validate(step string, joined map[string]bool) error {
	if (len(r.Nodes) == 0) == (r.PodNode == "") {
		return fmt.Errorf("%s: name the nodes or a podNode, one of the two", step)
	}
	for _, n := range r.Nodes {
		if !joined[n] {
			return fmt.Errorf("%s: node %q has not joined before", step, n)
		}
	}
	return nil
}

func (c *NodeCondition) validate(step string, joined map[string]bool) error {
	switch {
	case c.Type == "":
		return fmt.Errorf("%s: type is required", step)
	case c.Clear == (c.Status != ""):
		return fmt.Errorf("%s: set a status or clear, one of the two", step)
	}
	return c.NodeRef.validate(step, joined)
}

// validateChoices checks the fields that take one of a few words.
func (sc *Scenario) validateChoices() error {
	switch sc.Admission {
	case "", "webhook", "policy", "none":
	default:
		return at(sc.line("admission"), "admission %q: want webhook, policy or none", sc.Admission)
	}
	if sc.GateProcess != nil && sc.GateProcess.Replicas == 0 {
		sc.GateProcess.Replicas = 1
	}
	switch sc.Webhook.FailurePolicy {
	case "", "Fail", "Ignore":
	default:
		return at(sc.line("webhook", "failurePolicy"), "webhook.failurePolicy %q: want Fail or Ignore", sc.Webhook.FailurePolicy)
	}
	if sc.GateStartsAfterBound && sc.GateStartsAt <= 0 {
		return at(sc.line("gateStartsAfterBound"), "gateStartsAfterBound needs gateStartsAt: a gate that starts with the run has nothing to wait for")
	}
	if sc.Plane != nil && sc.Plane.NodeMonitorGracePeriod < 4*time.Second {
		return at(sc.line("plane", "nodeMonitorGracePeriod"), "plane.nodeMonitorGracePeriod %s: at least 4s", sc.Plane.NodeMonitorGracePeriod)
	}
	if f := sc.Kubelet.NodeStatusReportFrequency; f != 0 && f < time.Second {
		return at(sc.line("kubelet", "nodeStatusReportFrequency"), "kubelet.nodeStatusReportFrequency %s: at least 1s, or unset", f)
	}
	if ct := sc.Expect.ConditionTaint; ct != nil {
		if ct.Taint.Key == "" || len(ct.While) == 0 {
			return at(sc.line("expect", "conditionTaint"), "expect.conditionTaint needs a taint key and at least one while condition")
		}
		for i, w := range ct.While {
			if _, err := w.Regexp(); err != nil {
				return at(sc.line("expect", "conditionTaint", "while", i), "expect.conditionTaint.while[%d].status: %v", i, err)
			}
		}
	}
	switch sc.Expect.Violations {
	case "":
		sc.Expect.Violations = "none"
	case "none", "some":
	default:
		return at(sc.line("expect", "violations"), "expect.violations %q: want none or some", sc.Expect.Violations)
	}
	return nil
}

func (sc *Scenario) validateFault(s *Step) error {
	switch {
	case (s.GateCrash != nil || s.LeaderFailover != nil) && sc.GateProcess == nil:
		return fmt.Errorf("gateCrash and leaderFailover need gateProcess (the gate must run as a process to be killed)")
	case s.LeaderFailover != nil && sc.GateProcess.Replicas < 2:
		return fmt.Errorf("leaderFailover needs gateProcess.replicas >= 2")
	case s.WebhookOutage != nil && s.WebhookOutage.Mode != "" && s.WebhookOutage.Mode != "refuse" && s.WebhookOutage.Mode != "hang":
		return fmt.Errorf("webhookOutage.mode %q: want refuse or hang", s.WebhookOutage.Mode)
	case s.TaintWriters != nil && (s.TaintWriters.Writers <= 0 || s.TaintWriters.Interval <= 0):
		return fmt.Errorf("taintWriters needs positive writers and interval")
	case s.WatchDrops != nil && s.WatchDrops.Every <= 0:
		return fmt.Errorf("watchDrops.every must be positive")
	case s.BypassPods != nil && s.BypassPods.Count <= 0:
		return fmt.Errorf("bypassPods.count must be positive")
	case s.KubeletStop != nil && sc.Plane == nil:
		return fmt.Errorf("kubeletStop needs plane.nodeMonitorGracePeriod: the default waits minutes before a node goes NotReady")
	case s.Scale != nil && !sc.hasWorkload(s.Scale.Workload):
		return fmt.Errorf("scale: no workload %q", s.Scale.Workload)
	case s.Scale != nil && sc.workloadKind(s.Scale.Workload) != KindDeployment:
		return fmt.Errorf("scale: workload %q is a StatefulSet; scale changes Deployments", s.Scale.Workload)
	case s.InitPod != nil && !sc.hasInit(s.InitPod.Name):
		return fmt.Errorf("initPod: no init DaemonSet %q", s.InitPod.Name)
	case s.InitPod != nil && !slices.Contains([]string{InitPodUnready, InitPodReady, InitPodDelete, InitPodFlap}, s.InitPod.State):
		return fmt.Errorf("initPod.state %q: want unready, ready, delete or flap", s.InitPod.State)
	case s.InitPod != nil && s.InitPod.State == InitPodFlap && (s.InitPod.Every <= 0 || s.InitPod.Duration <= 0):
		return fmt.Errorf("initPod: flap needs positive every and duration")
	case s.DeleteInitDaemonSet != nil && !sc.hasInit(s.DeleteInitDaemonSet.Name):
		return fmt.Errorf("deleteInitDaemonSet: no init DaemonSet %q", s.DeleteInitDaemonSet.Name)
	}
	return nil
}

func (sc *Scenario) hasWorkload(name string) bool {
	for _, w := range sc.Workloads {
		if w.Name == name {
			return true
		}
	}
	return false
}

func (sc *Scenario) workloadKind(name string) string {
	for _, w := range sc.Workloads {
		if w.Name == name {
			return w.Kind
		}
	}
	return ""
}

func (sc *Scenario) hasInit(name string) bool {
	for _, in := range sc.Init {
		if in.Name == name {
			return true
		}
	}
	return false
}

// NodeName is the name of the i-th node of a join with this prefix.
func (sc *Scenario) NodeName(prefix string, i int) string {
	return fmt.Sprintf("%s-%s%d", sc.Name, prefix, i)
}

// NodeNames is the set of every node the scenario joins: on a shared plane, the Nodes (and
// the Events about them) that are this scenario's. A prefix match on its name would not
// do, since one scenario's name can begin another's (init-never-ready-timeout and
// init-never-ready-timeout-keep).
func (sc *Scenario) NodeNames() map[string]bool {
	names := map[string]bool{}
	for _, s := range sc.Timeline {
		if s.Join != nil {
			for i := 0; i < s.Join.Count; i++ {
				names[sc.NodeName(s.Join.Prefix, i)] = true
			}
		}
	}
	return names
}

// LoadAll loads FILE or DIR arguments (a DIR contributes its *.yaml files, sorted).
func LoadAll(args []string) ([]*Scenario, error) {
	var out []*Scenario
	for _, arg := range args {
		files := []string{arg}
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(arg, "*.yaml"))
			sort.Strings(files)
		}
		for _, f := range files {
			sc, err := Load(f)
			if err != nil {
				return nil, err
			}
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenarios in %v", args)
	}
	return out, nil
}

// Core is the Kubernetes form.
func (t Toleration) Core() corev1.Toleration {
	return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
}

// Core is the Kubernetes form.
func (t Taint) Core() corev1.Taint {
	return corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
}

// exclusiveNodes is the size from which a scenario runs alone: a burst that large keeps the
// one scheduler busy with its pending Pods, and scenarios sharing the plane would measure
// that queue instead of the gate.
const exclusiveNodes = 100

// RestartsAPIServer reports whether the scenario restarts kube-apiserver.
func (sc *Scenario) RestartsAPIServer() bool {
	for _, s := range sc.Timeline {
		if s.APIServerRestart != nil {
			return true
		}
	}
	return false
}

// Exclusive reports whether a scenario must have the plane to itself: it restarts the
// apiserver or changes the controller-manager (which every other scenario would feel), or
// it is a large burst.
func (sc *Scenario) Exclusive() bool {
	if sc.Plane != nil || sc.RestartsAPIServer() {
		return true
	}
	nodes := 0
	for _, s := range sc.Timeline {
		if s.Join != nil {
			nodes += s.Join.Count
		}
	}
	return nodes >= exclusiveNodes
}

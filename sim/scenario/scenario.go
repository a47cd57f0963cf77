package scenario

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/startupgate/startupgate/gate/config"
)

// Scenario is one scenario file: typed data, strictly decoded. There is no logic in YAML —
// no templates and no scripts; everything a scenario can do is a field here.
type Scenario struct {
	// Name identifies the scenario in reports and begins its node names: a DNS label of
	// at most 40 characters.
	Name string `yaml:"name"`
	// Description says which hazard the scenario guards against (required).
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
	// slow to place Pods. Needs GateStartsAt.
	GateStartsAfterBound bool `yaml:"gateStartsAfterBound"`
	// Init lists the required init DaemonSets; empty means one default init DaemonSet
	// labelled startup.k8s.io/component=init that tolerates the taint and is ready after 1s.
	Init []InitDaemonSet `yaml:"init"`
	// DaemonSets are other (non-required) DaemonSets, e.g. tolerating agents that may land early.
	DaemonSets []DaemonSet `yaml:"daemonSets"`
	// Workloads are Deployments created, and left pending, before the first node joins.
	Workloads []Workload `yaml:"workloads"`
	// Timeline is what happens during the run: steps, run in order of their At.
	Timeline []Step `yaml:"timeline"`
	// Expect is what the run must show to pass.
	Expect Expect `yaml:"expect"`
	// Timeout bounds the whole run (default 2m); a run that is not settled by then stops and
	// is judged as it stands.
	Timeout time.Duration `yaml:"timeout"`
	// Plane changes the embedded plane's controller-manager for this scenario, which then
	// runs alone (embedded backend only).
	Plane *Plane `yaml:"plane"`
	// Kubelet sets what a real kubelet's configuration would for the fake kubelets.
	Kubelet KubeletSettings `yaml:"kubelet"`
	// Autoscaler makes a real autoscaler create the nodes, from the pending workload Pods,
	// instead of join steps; such a scenario runs alone (embedded backend only).
	Autoscaler *Autoscaler `yaml:"autoscaler"`

	// File is filled by Load; GateConfig by Parse: the gate's defaults with the gate
	// section applied, validated. A test may adjust it (a negative control turns a
	// protection off) before the scenario runs.
	File       string        `yaml:"-"`
	GateConfig config.Config `yaml:"-"`

	// doc is the file's node tree, kept to name the line of a validation error.
	doc *yaml.Node
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
// apiserver or changes the controller-manager (which every other scenario would feel), it
// runs an autoscaler, or it is a large burst.
func (sc *Scenario) Exclusive() bool {
	// An autoscaler acts on every pending Pod it can place and every NodePool it finds, so
	// two running on one plane would each launch nodes for the other's scenario.
	if sc.Plane != nil || sc.Autoscaler != nil || sc.RestartsAPIServer() {
		return true
	}
	return sc.JoinCount() >= exclusiveNodes
}

// JoinCount is how many nodes the timeline's join steps register.
func (sc *Scenario) JoinCount() int {
	nodes := 0
	for _, s := range sc.Timeline {
		if s.Join != nil {
			nodes += s.Join.Count
		}
	}
	return nodes
}

package scenario

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/startupgate/startupgate/gate/rule"
)

// defaultAndValidate fills the defaults and rejects what cannot run, one concern at a time.
// Errors start with the line they concern (1 where the field has no line of its own).
func (sc *Scenario) defaultAndValidate() error {
	for _, step := range []func() error{
		sc.validateIdentity, sc.decodeGate, sc.defaultInit, sc.defaultWorkloads, sc.validateTimeline, sc.validateChoices,
		sc.validateAutoscaler,
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
		if s.Join.ReadyAfter < 0 {
			return fmt.Errorf("join.readyAfter %v must not be negative", s.Join.ReadyAfter)
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
	case s.Reboot != nil:
		return s.Reboot.validate("reboot", joined)
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

// validateFault checks a fault step's fields, and what the scenario must have for the
// fault, one family of faults at a time.
func (sc *Scenario) validateFault(s *Step) error {
	for _, check := range []func(*Step) error{sc.validateGateFault, validateAPIFault, sc.validateClusterFault, sc.validateInitFault} {
		if err := check(s); err != nil {
			return err
		}
	}
	return nil
}

// validateGateFault: crashes, failovers and outages of the gate itself.
func (sc *Scenario) validateGateFault(s *Step) error {
	switch {
	case s.PauseAutoscaler != nil && (sc.Autoscaler == nil || s.PauseAutoscaler.For <= 0):
		return fmt.Errorf("pauseAutoscaler needs an autoscaler section and a positive for")
	case s.SuspendRule != nil && s.SuspendRule.For <= 0:
		return fmt.Errorf("suspendRule.for must be positive")
	case s.SuspendRule != nil && !sc.hasRule(s.SuspendRule.Rule):
		return fmt.Errorf("suspendRule: no gate rule %q", s.SuspendRule.Rule)
	case s.EditRule != nil:
		return s.EditRule.validate()
	case (s.CrashAtWrite != nil || s.WatchDelay != nil) && sc.GateProcess != nil:
		return fmt.Errorf("crashAtWrite and watchDelay act in an in-process gate: drop gateProcess")
	case s.CrashAtWrite != nil && (s.CrashAtWrite.Write < 1 || s.CrashAtWrite.RestartAfter < 0):
		return fmt.Errorf("crashAtWrite.write must be at least 1, restartAfter not negative")
	case s.WatchDelay != nil && (s.WatchDelay.Resource != "nodes" && s.WatchDelay.Resource != "pods" || s.WatchDelay.Delay <= 0 || s.WatchDelay.For <= 0):
		return fmt.Errorf("watchDelay needs resource nodes or pods, and a positive delay and for")
	case (s.GateCrash != nil || s.LeaderFailover != nil) && sc.GateProcess == nil:
		return fmt.Errorf("gateCrash and leaderFailover need gateProcess (the gate must run as a process to be killed)")
	case s.LeaderFailover != nil && sc.GateProcess.Replicas < 2:
		return fmt.Errorf("leaderFailover needs gateProcess.replicas >= 2")
	case s.WebhookOutage != nil && s.WebhookOutage.Mode != "" && s.WebhookOutage.Mode != "refuse" && s.WebhookOutage.Mode != "hang":
		return fmt.Errorf("webhookOutage.mode %q: want refuse or hang", s.WebhookOutage.Mode)
	}
	return nil
}

// validate checks an edit: one rule named, at least one change, each a value the gate takes.
// Whether the rule exists is the run's to say: an earlier edit may have renamed it.
func (e *EditRule) validate() error {
	switch {
	case e.Rule == "":
		return fmt.Errorf("editRule.rule is required")
	case e.OnReboot == "" && e.Suspend == nil && e.DryRun == nil && !e.Remove && e.Rename == "" && e.TaintKey == "" && e.NodeSelector == nil && e.MaxHold == nil &&
		e.TimeoutPolicy == "" && e.Effect == "" && e.Mode == "" && e.Components == nil && e.Add == "":
		return fmt.Errorf("editRule: set at least one change")
	case e.Mode != "" && e.Mode != string(rule.Startup) && e.Mode != string(rule.Continuous):
		return fmt.Errorf("editRule.mode %q: want startup or continuous", e.Mode)
	case e.OnReboot != "" && e.OnReboot != "ignore" && e.OnReboot != "gate":
		return fmt.Errorf("editRule.onReboot %q: want ignore or gate", e.OnReboot)
	case e.For < 0 || e.MaxHold != nil && *e.MaxHold < 0:
		return fmt.Errorf("editRule: for and maxHold must not be negative")
	case e.Remove && e.For > 0:
		return fmt.Errorf("editRule: a removal is not undone; drop for")
	}
	return nil
}

// validateAPIFault: other writers, dropped watches and Pods that bypass the scheduler, all
// seen through the apiserver.
func validateAPIFault(s *Step) error {
	switch {
	case s.TaintWriters != nil && (s.TaintWriters.Writers <= 0 || s.TaintWriters.Interval <= 0):
		return fmt.Errorf("taintWriters needs positive writers and interval")
	case s.WatchDrops != nil && s.WatchDrops.Every <= 0:
		return fmt.Errorf("watchDrops.every must be positive")
	case s.BypassPods != nil && s.BypassPods.Count <= 0:
		return fmt.Errorf("bypassPods.count must be positive")
	}
	return nil
}

// validateClusterFault: a kubelet that stops, and a workload scaled under the gate.
func (sc *Scenario) validateClusterFault(s *Step) error {
	switch {
	case s.KubeletStop != nil && sc.Plane == nil:
		return fmt.Errorf("kubeletStop needs plane.nodeMonitorGracePeriod: the default waits minutes before a node goes NotReady")
	case s.Scale != nil && !sc.hasWorkload(s.Scale.Workload):
		return fmt.Errorf("scale: no workload %q", s.Scale.Workload)
	case s.Scale != nil && sc.workloadKind(s.Scale.Workload) != KindDeployment:
		return fmt.Errorf("scale: workload %q is a StatefulSet; scale changes Deployments", s.Scale.Workload)
	}
	return nil
}

// validateInitFault: init Pods that change state, and init DaemonSets deleted.
func (sc *Scenario) validateInitFault(s *Step) error {
	switch {
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

func (sc *Scenario) hasRule(name string) bool {
	for _, r := range sc.GateConfig.EffectiveRules() {
		if r.Name == name {
			return true
		}
	}
	return false
}

// validateAutoscaler checks the autoscaler section, and that a bound on NodeClaims has one.
func (sc *Scenario) validateAutoscaler() error {
	if sc.Autoscaler == nil {
		if sc.Expect.NodeClaims != 0 {
			return at(sc.line("expect", "nodeClaims"), "expect.nodeClaims needs an autoscaler section: only an autoscaler creates NodeClaims")
		}
		return nil
	}
	k := sc.Autoscaler.Karpenter
	if k == nil {
		return at(sc.line("autoscaler"), "autoscaler: name one (karpenter)")
	}
	if sc.Expect.NodeClaims < 0 {
		return at(sc.line("expect", "nodeClaims"), "expect.nodeClaims %d: want 0 (not judged) or more", sc.Expect.NodeClaims)
	}
	if len(k.InstanceTypes) == 0 {
		return at(sc.line("autoscaler", "karpenter"), "autoscaler.karpenter.instanceTypes: at least one")
	}
	for i, it := range k.InstanceTypes {
		if err := it.validate(); err != nil {
			return at(sc.line("autoscaler", "karpenter", "instanceTypes", i), "autoscaler.karpenter.instanceTypes[%d]: %v", i, err)
		}
	}
	switch k.Consolidation.Policy {
	case "", "WhenEmpty", "WhenEmptyOrUnderutilized":
	default:
		return at(sc.line("autoscaler", "karpenter", "consolidation", "policy"), "autoscaler.karpenter.consolidation.policy %q: want WhenEmpty or WhenEmptyOrUnderutilized", k.Consolidation.Policy)
	}
	if k.Consolidation.After < 0 {
		return at(sc.line("autoscaler", "karpenter", "consolidation", "after"), "autoscaler.karpenter.consolidation.after must not be negative")
	}
	for _, list := range []struct {
		field  string
		taints []Taint
	}{{"startupTaints", k.StartupTaints}, {"taints", k.Taints}} {
		for i, t := range list.taints {
			if err := t.validate(); err != nil {
				return at(sc.line("autoscaler", "karpenter", list.field, i), "autoscaler.karpenter.%s[%d]: %v", list.field, i, err)
			}
		}
	}
	return nil
}

// validate checks that the type names itself and has some CPU and memory.
func (it InstanceType) validate() error {
	if it.Name == "" {
		return fmt.Errorf("name is required")
	}
	for _, q := range []struct{ field, value string }{{"cpu", it.CPU}, {"memory", it.Memory}} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return fmt.Errorf("%s %q: %w", q.field, q.value, err)
		}
		if v.Sign() <= 0 {
			return fmt.Errorf("%s %q must be positive", q.field, q.value)
		}
	}
	if it.Pods < 0 {
		return fmt.Errorf("pods %d must not be negative", it.Pods)
	}
	return nil
}

// validate checks that the taint is one the apiserver accepts: a qualified-name key and a
// known effect.
func (t Taint) validate() error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", t.Key, errs[0])
	}
	switch corev1.TaintEffect(t.Effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("effect %q: want NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// StatusRow is one node and one rule that applies to it: why the node is held, read with
// the same pure decision the controller uses.
type StatusRow struct {
	Node  string `json:"node"`
	Rule  string `json:"rule"`
	Mode  string `json:"mode"`
	State string `json:"state"`
	// HeldFor is how long the rule has held the node: since creation while held, creation to
	// release once released.
	HeldFor metav1.Duration `json:"heldFor"`
	// WaitingOn is the decision's reason while the node is held.
	WaitingOn string `json:"waitingOn,omitempty"`
	// Deadline is when the max hold ends, if the rule has one and still holds the node.
	Deadline *metav1.Time `json:"deadline,omitempty"`
	Taint    string       `json:"taint"`
	DryRun   bool         `json:"dryRun,omitempty"`
	// Holding: the row's taint is on the node (gate status --held).
	Holding bool `json:"holding"`
}

// poolRead is a NodePool's annotations as `gate status` read them, or why it could not.
type poolRead struct {
	annotations map[string]string
	err         error
}

// statusRows is the pure part of `gate status`: a row per node and rule that applies to it, in
// node order, then rule order. pools are the NodePools of the nodes a replace rule has timed
// out (replacePools), by name.
func statusRows(cfg *config.Config, nodes []corev1.Node, pods []corev1.Pod, dss []appsv1.DaemonSet, pools map[string]poolRead, now time.Time) []StatusRow {
	all := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		// As the gate reads them: an earlier release's records where it moves them.
		cfg.Migrate(&nodes[i])
		all[i] = &nodes[i]
	}
	byNode := map[string][]*corev1.Pod{}
	for i := range pods {
		byNode[pods[i].Spec.NodeName] = append(byNode[pods[i].Spec.NodeName], &pods[i])
	}
	var rows []StatusRow
	for i := range nodes {
		n := &nodes[i]
		for _, rl := range cfg.EffectiveRules() {
			if !rl.Matches(n) && !rl.HasTaint(n) {
				continue
			}
			if rl.Mode == rule.Condition {
				if row, ok := conditionStatusOf(rl, n); ok {
					row.Holding = rl.HasTaint(n)
					rows = append(rows, suspendedRow(rl, row))
				}
				continue
			}
			in := rule.Input{Node: n, Pods: byNode[n.Name], Expected: rl.ExpectedOn(n, dss), Blocked: rl.Untolerated(n, dss, cfg.OwnTaint(n)), Now: now}
			row, d := statusOf(running(rl), cfg.Readiness(), in)
			if d.Replace {
				row.WaitingOn = replaceStatus(rl, d, n, all, pools, now)
			}
			row.Holding = rl.HasTaint(n)
			rows = append(rows, suspendedRow(rl, row))
		}
		for _, o := range cfg.Orphans(n) {
			rows = append(rows, StatusRow{Node: n.Name, Rule: o.Record, State: string(rule.PhaseOrphaned), Taint: o.Taint.ToString(), Holding: true,
				WaitingOn: fmt.Sprintf("placed for a taint no rule has any more (a rule removed, given a new taint, or a dry run); lifted %s after the gate first saw it", cfg.OrphanGracePeriod.Duration)})
		}
	}
	return rows
}

// running is the rule as it would run if not suspended: a suspended rule's row says what
// resuming it would do.
func running(rl *rule.Rule) *rule.Rule {
	if !rl.Suspend {
		return rl
	}
	r := *rl
	r.Suspend = false
	return &r
}

// replaceStatus says what becomes of a node a replace rule has timed out: the replacement
// the controller would decide now (rule.DecideReplace, on the budget and the NodePool's
// storm guard as read), or, once replacing, that Karpenter removes it.
func replaceStatus(rl *rule.Rule, d rule.Decision, n *corev1.Node, all []*corev1.Node, pools map[string]poolRead, now time.Time) string {
	if d.State == rule.StateReplacing {
		return d.Reason
	}
	p := pools[n.Labels[rule.KarpenterNodePoolLabel]]
	rp := rl.DecideReplace(d, rl.ViewOf(n, all, nil, p.annotations[rl.TimeoutsAnnotation()], p.err), now)
	return d.Reason + "; " + rp.Reason
}

// statusOf is the row of a node under a rule: its phase (rule.PhaseOf, the state machine's
// table read through the decision the controller makes in it) and what it waits on, with
// the decision.
func statusOf(rl *rule.Rule, rd rule.Readiness, in rule.Input) (StatusRow, rule.Decision) {
	n := in.Node
	d := rule.Decide(rl, rd, in)
	phase := rule.PhaseOf(d)
	row := StatusRow{Node: n.Name, Rule: rl.Name, Mode: string(rl.Mode), Taint: rl.Taint.ToString(), DryRun: rl.DryRun,
		State: string(phase), WaitingOn: d.Reason, HeldFor: metav1.Duration{Duration: in.Now.Sub(n.CreationTimestamp.Time).Round(time.Second)}}
	switch phase {
	case rule.PhaseWouldRelease:
		row.WaitingOn = ""
	case rule.PhaseRegated:
		if at := rl.BootOf(n).RegatedAt; !at.IsZero() {
			row.HeldFor = metav1.Duration{Duration: in.Now.Sub(at).Round(time.Second)}
		}
	case rule.PhaseReleased:
		row.WaitingOn, row.HeldFor = "", metav1.Duration{Duration: releasedAfter(rl, n)}
	case rule.PhaseHeld:
		if d.Release {
			row.WaitingOn = "requirements hold; release pending"
		}
	}
	if rl.MaxHold.Duration > 0 && (phase == rule.PhaseHeld || phase == rule.PhaseWouldHold) {
		row.Deadline = &metav1.Time{Time: n.CreationTimestamp.Add(rl.MaxHold.Duration)}
	}
	return row, d
}

// suspendedRow shows a suspended rule's row as suspended, with what the rule would do if it
// ran: the operator who froze it sees what resuming will change. A node the rule has
// released keeps its row, since the rule had nothing more to do there.
func suspendedRow(rl *rule.Rule, row StatusRow) StatusRow {
	if !rl.Suspend || row.State == string(rule.PhaseReleased) {
		return row
	}
	was := row.State
	if row.WaitingOn != "" {
		was += ": " + row.WaitingOn
	}
	row.State, row.WaitingOn = string(rule.PhaseSuspended), "writes nothing until resumed; running, it would be "+was
	return row
}

// conditionStatusOf is a condition rule's row (rule.ConditionPhase), for a node whose
// conditions match or that carries the rule's taint; other nodes have nothing to say about
// the rule.
func conditionStatusOf(rl *rule.Rule, n *corev1.Node) (StatusRow, bool) {
	d := rule.DecideCondition(rl, n)
	phase, ok := rl.ConditionPhase(n, d)
	row := StatusRow{Node: n.Name, Rule: rl.Name, Mode: string(rl.Mode), Taint: rl.Taint.ToString(), DryRun: rl.DryRun, WaitingOn: d.Reason, State: string(phase)}
	switch {
	case phase == rule.PhaseMatching:
		row.WaitingOn = d.Reason + "; not tainted yet: the eviction budget, or the write is pending"
	case phase == rule.PhaseTainted && !d.Match:
		row.WaitingOn = "the taint was not placed by the rule (set by hand?); the rule never lifts it"
	}
	return row, ok
}

// releasedAfter is creation to the rule's release, from its completion annotation.
func releasedAfter(rl *rule.Rule, n *corev1.Node) time.Duration {
	s, err := strconv.ParseInt(n.Annotations[rl.CompletedAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return time.Unix(s, 0).Sub(n.CreationTimestamp.Time)
}

// readStatus reads the named nodes (every node when names is empty), the init Pods and the
// DaemonSets, and returns their Status. It only reads: nodes get and list, pods and
// daemonsets list.
func readStatus(ctx context.Context, c client.Reader, cfg *config.Config, now time.Time, sel labels.Selector, names ...string) ([]StatusRow, error) {
	nodes, err := gate.ReadNodes(ctx, c, names)
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, func(n corev1.Node) bool { return !sel.Matches(labels.Set(n.Labels)) })
	pods, err := readInitPods(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	dss := &appsv1.DaemonSetList{}
	if err := c.List(ctx, dss); err != nil {
		return nil, fmt.Errorf("listing daemonsets: %w", err)
	}
	return statusRows(cfg, nodes, pods, dss.Items, readPools(ctx, c, cfg, nodes), now), nil
}

// readPools reads the NodePools of the nodes a rule with timeoutPolicy replace applies to,
// each once: their annotations hold the rules' storm guards. A NodePool that cannot be read
// (no Karpenter, no grant) is shown as such, never an error of the whole status.
func readPools(ctx context.Context, c client.Reader, cfg *config.Config, nodes []corev1.Node) map[string]poolRead {
	pools := map[string]poolRead{}
	for i := range nodes {
		name := nodes[i].Labels[rule.KarpenterNodePoolLabel]
		if _, read := pools[name]; read || name == "" || !replaces(cfg, &nodes[i]) {
			continue
		}
		p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: rule.KarpenterAPIVersion, Kind: "NodePool"}}
		err := c.Get(ctx, client.ObjectKey{Name: name}, p)
		pools[name] = poolRead{annotations: p.Annotations, err: err}
	}
	return pools
}

// replaces reports whether a rule with timeoutPolicy replace selects the node.
func replaces(cfg *config.Config, n *corev1.Node) bool {
	for _, rl := range cfg.EffectiveRules() {
		if rl.TimeoutPolicy == rule.TimeoutReplace && rl.Matches(n) {
			return true
		}
	}
	return false
}

// readInitPods lists the Pods of each of the config's Pod scopes, each once.
func readInitPods(ctx context.Context, c client.Reader, cfg *config.Config) ([]corev1.Pod, error) {
	listed, err := gate.ListInitPods(ctx, gate.OneReader(c), cfg)
	if err != nil {
		return nil, err
	}
	pods := make([]corev1.Pod, len(listed))
	for i, p := range listed {
		pods[i] = *p
	}
	return pods, nil
}

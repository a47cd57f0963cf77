package gate

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/rule"
)

// Condition rules' event reasons.
const (
	// ReasonConditionTainted: a condition rule put its taint on; the node's conditions match.
	ReasonConditionTainted = "StartupGateConditionTainted"
	// ReasonConditionCleared: a condition rule took its taint off; the conditions stopped matching.
	ReasonConditionCleared = "StartupGateConditionCleared"
	// ReasonWouldTaint is a dry-run condition rule's report of the taint it would put on.
	ReasonWouldTaint = "StartupGateWouldTaint"
	// ReasonBudgetExhausted: a NoExecute rule's conditions match, and its eviction budget
	// is spent; the node stays untainted until room is made.
	ReasonBudgetExhausted = "StartupGateBudgetExhausted"
)

// budgetRetry is how often a node that waits for its rule's eviction budget asks again: a
// budget frees up when another node's taint comes off, which is not an event of this node.
const budgetRetry = 10 * time.Second

// conditionRule runs a condition rule on a node: its taint is on exactly while the node's
// conditions match (unless keepAfterClear keeps it), and a NoExecute taint only within the
// rule's eviction budget.
func (r *Reconciler) conditionRule(ctx context.Context, f *facts, rl *rule.Rule) (time.Duration, error) {
	d := rule.DecideCondition(rl, f.node)
	if d.Left && !rl.DryRun {
		return 0, r.conditionClear(ctx, f, rl, d)
	}
	if !rl.Matches(f.node) {
		return 0, nil
	}
	st := r.track(ctx, f.node, rl, false)
	if rl.DryRun && d.Taint && r.reportedTaint(st) {
		return 0, nil // as if tainted: a dry run's taint is the one it reported
	}
	switch {
	case d.Taint && rl.Budgeted():
		return r.budgetedTaint(ctx, f, rl, st, d)
	case d.Taint:
		return 0, r.conditionTaint(ctx, f, rl, st, d)
	case d.Clear && !rl.DryRun:
		return 0, r.conditionClear(ctx, f, rl, d)
	case !d.Match:
		r.setWouldTaint(st, false)
	}
	return 0, nil
}

// budgetedTaint asks the rule's eviction budget before tainting. The question and the
// write hold the budget lock, so that two workers never both take the last place. A taint
// in the ledger holds its place already, which a lagging cache may not show: it is put
// back (someone took it off, or the cache is behind) without asking again, and noted anew,
// so that the ledger keeps the latest write.
func (r *Reconciler) budgetedTaint(ctx context.Context, f *facts, rl *rule.Rule, st *ruleState, d rule.ConditionDecision) (time.Duration, error) {
	r.budgetMu.Lock()
	defer r.budgetMu.Unlock()
	if !r.tainting.pending(rl.Name, f.node, rl.HasTaint(f.node)) {
		switch allowed, err := r.askBudget(ctx, f.node, rl, st); {
		case err != nil:
			return 0, err
		case !allowed:
			return budgetRetry, nil
		}
	}
	if err := r.conditionTaint(ctx, f, rl, st, d); err != nil || rl.DryRun || !rl.HasTaint(f.node) {
		return 0, err
	}
	r.tainting.note(rl.Name, f.node)
	return 0, nil
}

// askBudget reports whether the budget has a place for the node now, reporting the node
// held back when it has not. Callers hold budgetMu.
func (r *Reconciler) askBudget(ctx context.Context, node *corev1.Node, rl *rule.Rule, st *ruleState) (bool, error) {
	use, err := r.budgetUse(ctx, node, rl)
	if err != nil {
		return false, err
	}
	conditionTaintedNodes.WithLabelValues(rl.Name).Set(float64(use.Used))
	if !use.Allowed {
		budgetExhausted.WithLabelValues(rl.Name).Set(1)
		r.budgetDenied(ctx, node, rl, st, use)
		return false, nil
	}
	budgetExhausted.WithLabelValues(rl.Name).Set(0)
	r.mu.Lock()
	st.budgetDenied = false
	r.mu.Unlock()
	return true, nil
}

// budgetUse counts the selected nodes that carry the rule's taint (a dry run: that it
// reported it would taint): from the cache, and from the ledger of taints this process wrote
// that the cache does not show yet. Without the ledger, such a node would count only by its
// place in the queue, and a late view of another node's match can sort that one ahead of
// it. The budget lock makes the question and the write one step.
func (r *Reconciler) budgetUse(ctx context.Context, node *corev1.Node, rl *rule.Rule) (rule.BudgetUse, error) {
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return rule.BudgetUse{}, fmt.Errorf("listing nodes for rule %q's eviction budget (node %q): %w", rl.Name, node.Name, err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return rule.AllowTaint(rl, node, nodes, func(n *corev1.Node) bool {
		if rl.DryRun {
			return r.wouldTaintLocked(n.Name, rl)
		}
		has := rl.HasTaint(n)
		return r.tainting.pending(rl.Name, n, has) || has
	}), nil
}

// budgetDenied reports, once per node until it is tainted, that the budget holds it back.
func (r *Reconciler) budgetDenied(ctx context.Context, node *corev1.Node, rl *rule.Rule, st *ruleState, use rule.BudgetUse) {
	if !r.firstTime(&st.budgetDenied) {
		return
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonBudgetExhausted, eventActionGate,
		"Rule %s: node conditions match, but %d of %d nodes already carry taint %s (maxTainted %s); not tainting",
		rl.Name, use.Used, use.Budget, rl.Taint.ToString(), rl.MaxTainted.String())
	log.FromContext(ctx).Info("Eviction budget exhausted, not tainting node", "node", klog.KObj(node), "rule", rl.Name,
		"tainted", use.Used, "budget", use.Budget)
}

// conditionTaint puts the rule's taint on, marked as the rule's, in one guarded write; a
// dry-run rule reports it once instead, with the Pods the taint would evict.
func (r *Reconciler) conditionTaint(ctx context.Context, f *facts, rl *rule.Rule, st *ruleState, d rule.ConditionDecision) error {
	if rl.DryRun {
		return r.wouldTaint(ctx, f.node, rl, st, d)
	}
	now := r.Clock.Now()
	written, wrote, err := r.Writer.Write(ctx, f.node, func(n *corev1.Node) { rl.ApplyCondition(d, n, now) })
	if err != nil {
		return fmt.Errorf("tainting node %q for rule %q: %w", f.node.Name, rl.Name, err)
	}
	f.node = written
	if !wrote {
		return nil
	}
	conditionTaintsTotal.WithLabelValues(rl.Name, "tainted").Inc()
	r.Recorder.Eventf(written, nil, corev1.EventTypeWarning, ReasonConditionTainted, eventActionGate, "Rule %s: put taint %s on: %s", rl.Name, rl.Taint.ToString(), d.Reason)
	log.FromContext(ctx).Info("Tainted node, its conditions match", "node", klog.KObj(written), "rule", rl.Name, "taint", rl.Taint.ToString(), "reason", d.Reason)
	return nil
}

// conditionClear takes off the taint the rule placed, and its mark, in one guarded write:
// the node's conditions stopped matching, or it left the rule's selector. What it reports is
// what the write did, decided again on the copy written (after a conflict, a fresh read),
// and the taint leaves the budget's ledger once the write shows it gone.
func (r *Reconciler) conditionClear(ctx context.Context, f *facts, rl *rule.Rule, d rule.ConditionDecision) error {
	now := r.Clock.Now()
	var (
		done rule.ConditionDecision
		had  bool
	)
	written, wrote, err := r.Writer.Write(ctx, f.node, func(n *corev1.Node) {
		had = rl.HasTaint(n)
		done, _ = rl.ApplyCondition(d, n, now)
	})
	if err != nil {
		return fmt.Errorf("removing rule %q's taint from node %q (%s): %w", rl.Name, f.node.Name, d.Reason, err)
	}
	f.node = written
	if !rl.HasTaint(written) {
		r.budgetMu.Lock()
		r.tainting.drop(rl.Name, written.Name)
		r.budgetMu.Unlock()
	}
	switch {
	case !wrote || !had:
	case done.Left:
		r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonLeftSelector, eventActionRelease, "Rule %s: removed taint %s: %s", rl.Name, rl.Taint.Key, done.Reason)
		log.FromContext(ctx).Info("Node left a rule's selector, removed its taint", "node", klog.KObj(written), "rule", rl.Name)
	default:
		conditionTaintsTotal.WithLabelValues(rl.Name, "cleared").Inc()
		r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, ReasonConditionCleared, eventActionRelease, "Rule %s: removed taint %s: %s", rl.Name, rl.Taint.ToString(), done.Reason)
		log.FromContext(ctx).Info("Removed condition taint, conditions no longer match", "node", klog.KObj(written), "rule", rl.Name, "reason", done.Reason)
	}
	return nil
}

// wouldTaint reports, once per match, what a dry-run condition rule would do: the taint, and
// for a NoExecute taint the Pods it would evict (read from the API: the gate caches init
// Pods only).
func (r *Reconciler) wouldTaint(ctx context.Context, node *corev1.Node, rl *rule.Rule, st *ruleState, d rule.ConditionDecision) error {
	if !r.setWouldTaint(st, true) {
		return nil
	}
	evicts := ""
	if rl.Taint.Effect == corev1.TaintEffectNoExecute {
		pods, err := r.evictable(ctx, node.Name, rl)
		if err != nil {
			r.setWouldTaint(st, false)
			return err
		}
		evicts = fmt.Sprintf(", evicting %d pod(s)%s", len(pods), podList(pods))
	}
	dryRunTotal.WithLabelValues(rl.Name, "would_taint").Inc()
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonWouldTaint, eventActionGate, "Rule %s (dry run): would put taint %s on node %s%s: %s",
		rl.Name, rl.Taint.ToString(), node.Name, evicts, d.Reason)
	log.FromContext(ctx).Info("Dry run: would taint node", "node", klog.KObj(node), "rule", rl.Name, "taint", rl.Taint.ToString(), "evicts", evicts)
	return nil
}

// setWouldTaint records whether a dry-run rule has reported its taint on the node, and
// reports whether that changed.
func (r *Reconciler) setWouldTaint(st *ruleState, v bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := st.wouldTaint != v
	st.wouldTaint = v
	return changed
}

func (r *Reconciler) reportedTaint(st *ruleState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.wouldTaint
}

func (r *Reconciler) wouldTaintLocked(name string, rl *rule.Rule) bool {
	if st, ok := r.nodes[name]; ok {
		if rs, ok := st.rules[rl.Name]; ok {
			return rs.wouldTaint
		}
	}
	return false
}

// evictable lists the Pods on the node that the rule's NoExecute taint would evict: those
// that do not tolerate it (a toleration with tolerationSeconds still ends in eviction).
func (r *Reconciler) evictable(ctx context.Context, nodeName string, rl *rule.Rule) ([]string, error) {
	pods, err := podsOn(ctx, r.Writer.Reader, nodeName)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !toleratesForever(p.Spec.Tolerations, &rl.Taint) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out, nil
}

// toleratesForever: some toleration matches the taint and sets no tolerationSeconds.
func toleratesForever(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), taint, true) && tolerations[i].TolerationSeconds == nil {
			return true
		}
	}
	return false
}

// podList names up to ten Pods, for an event.
func podList(pods []string) string {
	if len(pods) == 0 {
		return ""
	}
	const most = 10
	if len(pods) > most {
		return fmt.Sprintf(": %s and %d more", strings.Join(pods[:most], ", "), len(pods)-most)
	}
	return ": " + strings.Join(pods, ", ")
}

package watch

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/record"
)

func (r *Recorder) node(old, cur *corev1.Node) {
	now := time.Now()
	m := record.Mark{RV: rv(cur), Time: now}
	maxStore(&r.nodeRV, m.RV)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.nodes[string(cur.UID)]
	if !ok {
		rec = &nodeState{NodeRecord: &record.NodeRecord{Name: cur.Name, UID: string(cur.UID), Gated: r.config().Gated(cur), Created: m,
			CreatedAt: cur.CreationTimestamp.Time, Components: r.components(cur.Labels)}}
		// The first version this process sees may be later than the CREATE (the recorder
		// starts before any node joins, so normally it is the CREATE itself).
		rec.TaintedAtCreate = r.config().HasTaint(cur)
		r.nodes[rec.UID] = rec
		r.byName[cur.Name] = append(r.byName[cur.Name], rec.UID)
	}
	if old != nil && !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		// Relabelled: the init DaemonSets that target the node may differ now.
		rec.Components = r.components(cur.Labels)
		if rec.InitReady.IsZero() && allReady(rec, r.continuous) {
			rec.InitReady = m
		}
	}
	rec.labels = cur.Labels
	if r.config().HasTaint(cur) && rec.Tainted.IsZero() {
		rec.Tainted = m
	}
	r.rules(rec, cur, m)
	r.reboots(rec, cur, m)
	rec.Conditions = appendChanged(rec.Conditions, conditionFacts(cur), m)
	rec.Taints = appendChanged(rec.Taints, taintFacts(cur), m)
	if rec.Released.IsZero() {
		if r.released(cur) {
			rec.Released = m
		} else {
			rec.Held = m
		}
	}
	if old != nil {
		for _, t := range lostTaints(old.Spec.Taints, cur.Spec.Taints) {
			if isForeign(t, r.config()) && !placed(old, t, r.config()) && !r.ledger.Removed(cur.Name, t.Key) {
				rec.LostTaints = append(rec.LostTaints, fmt.Sprintf("%s at rv %d, written by %s", t.ToString(), m.RV, writers(old, cur)))
			}
		}
	}
}

// released: the node has its completion and not the gate's taint. A node the gate released
// under any record is in service: a rule added since adopts it (state adopting) and does not
// hold it, so it is released before that rule writes its own completion.
func (r *Recorder) released(n *corev1.Node) bool {
	cfg := r.config()
	return (cfg.Released(n) || cfg.InService(n)) && !cfg.HasTaint(n)
}

// rules records, per rule, what this version shows: completion annotations that change
// after they were set, a dry-run rule's taint or completion (which must never be written),
// and a rule's taint on a node its selector does not match.
func (r *Recorder) rules(rec *nodeState, cur *corev1.Node, m record.Mark) {
	if rec.completed == nil {
		rec.completed = map[string]string{}
	}
	var outside []string
	for _, rl := range r.config().EffectiveRules() {
		v, set := cur.Annotations[rl.CompletedAnnotation] // v is "" when not set
		// A condition rule's annotation marks its taint and comes and goes with it; it is
		// not a completion.
		if last, seen := rec.completed[rl.CompletedAnnotation]; (set || seen) && rl.Mode != rule.Condition {
			if !seen || v != last {
				rec.CompletedAt = append(rec.CompletedAt, rl.CompletedAnnotation+"="+v)
			}
			rec.completed[rl.CompletedAnnotation] = v
		}
		if rl.Mode == rule.Continuous && !rl.DryRun {
			if rec.retainted == nil {
				rec.retainted = map[string]bool{}
			}
			again := set && rl.HasTaint(cur)
			if again && !rec.retainted[rl.Name] {
				rec.Retainted = append(rec.Retainted, m)
			}
			rec.retainted[rl.Name] = again
		}
		if rl.Mode == rule.Startup && rl.Replacing(cur) && rec.Replacing.IsZero() {
			rec.Replacing, rec.ReplacingRule = m, rl.Name
		}
		switch {
		case rl.DryRun && (rl.HasTaint(cur) || set) && !slices.Contains(rec.DryRunWrites, rl.Name):
			rec.DryRunWrites = append(rec.DryRunWrites, rl.Name)
		case !rl.DryRun && rl.HasTaint(cur) && !rl.Matches(cur):
			outside = append(outside, fmt.Sprintf("%s (rule %s) at rv %d", rl.Taint.Key, rl.Name, m.RV))
		}
	}
	if rec.Created.RV == m.RV {
		rec.OutsideAtCreate = outside
	}
	rec.OutsideNow = outside
}

func (r *Recorder) nodeDeleted(o any) {
	n, ok := deletedObject[*corev1.Node](o)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.nodes[string(n.UID)]; ok && rec.Deleted.IsZero() {
		rec.Deleted = record.Mark{RV: rv(n), Time: time.Now()}
	}
}

// lostTaints are the taints in old that cur no longer has.
func lostTaints(old, cur []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, o := range old {
		found := false
		for _, c := range cur {
			if c.Key == o.Key && c.Effect == o.Effect {
				found = true
				break
			}
		}
		if !found {
			out = append(out, o)
		}
	}
	return out
}

// isForeign: not a rule's taint, and not one that a node's lifecycle adds and removes: the
// node lifecycle controller's and the cloud provider's, and Karpenter's own
// (karpenter.sh/unregistered until it registers the node, karpenter.sh/disrupted while it
// disrupts it). Their removal is their owner's, never a lost write.
func isForeign(t corev1.Taint, cfg *config.Config) bool {
	for _, rl := range cfg.EffectiveRules() {
		if t.Key == rl.Taint.Key && t.Effect == rl.Taint.Effect {
			return false
		}
	}
	for _, lifecycle := range []string{"node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/"} {
		if strings.HasPrefix(t.Key, lifecycle) {
			return false
		}
	}
	return true
}

// placed reports whether the node, as it was, marked t as a taint the gate placed: a rule
// the gate no longer runs placed it, and the gate lifts it (an orphan). The mark is the
// gate's, and this reads it as the gate does: by key and effect, whatever the value.
func placed(n *corev1.Node, t corev1.Taint, cfg *config.Config) bool {
	for k, v := range n.Annotations {
		if placedTaint, _, ok := rule.ParsePlaced(v); ok && strings.HasPrefix(k, cfg.PlacedAnnotation+".") &&
			placedTaint.Key == t.Key && placedTaint.Effect == t.Effect {
			return true
		}
	}
	return false
}

// writers names the field managers whose entries changed between two versions: who wrote
// the second one. It turns a lost-taint report into a suspect.
func writers(old, cur *corev1.Node) string {
	seen := map[string]string{}
	for _, e := range old.ManagedFields {
		seen[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = e.Time.String()
	}
	var out []string
	for _, e := range cur.ManagedFields {
		k := e.Manager + "/" + string(e.Operation) + "/" + e.Subresource
		if seen[k] != e.Time.String() {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return "unknown (same managedFields)"
	}
	return strings.Join(out, ",")
}

// appendChanged appends facts as of m unless they equal the last ones.
func appendChanged(list []record.Snapshot, facts []string, m record.Mark) []record.Snapshot {
	if n := len(list); n > 0 && slices.Equal(list[n-1].Facts, facts) {
		return list
	}
	return append(list, record.Snapshot{Mark: m, Facts: facts})
}

func conditionFacts(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	slices.Sort(out)
	return out
}

func taintFacts(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Spec.Taints))
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

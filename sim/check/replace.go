package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// The gate's replacements (timeoutPolicy replace): it marks a node that never warmed and
// deletes its NodeClaim.
const (
	// KindReplacedEarly is a node the gate began to replace before the rule's maxHold had
	// passed since its creation: a node still warming handed back to the autoscaler.
	KindReplacedEarly = "replaced-early"
	// KindReplacingOverBudget is more of a rule's nodes in replacement at once (marked,
	// not yet deleted) than its maxReplacing: the storm the budget exists to stop.
	KindReplacingOverBudget = "replacing-over-budget"
)

// ReplaceBudget is what a replace rule allows: the hold before a node is replaced, and how
// many may be in replacement at once.
type ReplaceBudget struct {
	MaxHold      time.Duration
	MaxReplacing int
}

// Replacements judges the replacements in the records against each rule's budget (by rule
// name). A node is in replacement from the first version seen with the mark until its
// deletion; the moments are ordered by resourceVersion, which one etcd orders for every
// Node. A re-gated node's hold counts from its re-gate, which the records do not keep: only
// a node never released is judged for an early replacement.
func Replacements(records []record.NodeRecord, start time.Time, budgets map[string]ReplaceBudget) []Violation {
	type change struct {
		at    record.Mark
		rule  string
		delta int
	}
	var out []Violation
	var changes []change
	for i := range records {
		rec := &records[i]
		b, ok := budgets[rec.ReplacingRule]
		if rec.Replacing.IsZero() || !ok {
			continue
		}
		if held := rec.Replacing.Time.Sub(rec.CreatedAt); rec.Released.IsZero() && held < b.MaxHold {
			out = append(out, Violation{Kind: KindReplacedEarly, Node: rec.Name, AtMS: rec.Replacing.Time.Sub(start).Milliseconds(), RV: rec.Replacing.RV,
				Detail: fmt.Sprintf("marked for replacement by rule %s %s after its creation, maxHold %s", rec.ReplacingRule, held.Round(time.Millisecond), b.MaxHold)})
		}
		changes = append(changes, change{rec.Replacing, rec.ReplacingRule, 1})
		if !rec.Deleted.IsZero() {
			changes = append(changes, change{rec.Deleted, rec.ReplacingRule, -1})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].at.RV < changes[j].at.RV })
	inFlight, reported := map[string]int{}, map[string]bool{}
	for _, c := range changes {
		inFlight[c.rule] += c.delta
		if n, limit := inFlight[c.rule], budgets[c.rule].MaxReplacing; n > limit && !reported[c.rule] {
			reported[c.rule] = true
			out = append(out, Violation{Kind: KindReplacingOverBudget, AtMS: c.at.Time.Sub(start).Milliseconds(), RV: c.at.RV,
				Detail: fmt.Sprintf("rule %s: %d nodes in replacement at once, maxReplacing %d", c.rule, n, limit)})
		}
	}
	return out
}

// Replaced counts the nodes the gate began to replace.
func Replaced(records []record.NodeRecord) int {
	n := 0
	for i := range records {
		if !records[i].Replacing.IsZero() {
			n++
		}
	}
	return n
}

// ReplacementReleases pairs each replaced node with its replacement and returns, per pair,
// the time from the replaced node's mark (the gate's decision at the timeout) to the
// replacement's release: how long the capacity stayed missing. The replacement is taken to
// be the earliest node created after the mark that no earlier mark took, as Karpenter
// launches one for the Pods the deleted node leaves pending; the records keep no NodePool,
// so in a run that also scales up for other reasons an unrelated node can be taken. A mark
// with no such node released (the replacement never warmed, or none was launched) has no
// pair.
func ReplacementReleases(records []record.NodeRecord) []time.Duration {
	var marked, created []*record.NodeRecord
	for i := range records {
		rec := &records[i]
		if !rec.Replacing.IsZero() {
			marked = append(marked, rec)
		}
		created = append(created, rec)
	}
	sort.SliceStable(marked, func(i, j int) bool { return marked[i].Replacing.RV < marked[j].Replacing.RV })
	sort.SliceStable(created, func(i, j int) bool { return created[i].Created.RV < created[j].Created.RV })
	taken := map[*record.NodeRecord]bool{}
	var out []time.Duration
	for _, m := range marked {
		for _, c := range created {
			if taken[c] || c.Created.RV <= m.Replacing.RV {
				continue
			}
			taken[c] = true
			if !c.Released.IsZero() {
				out = append(out, c.Released.Time.Sub(m.Replacing.Time))
			}
			break
		}
	}
	return out
}

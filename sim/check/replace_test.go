package check

import (
	"slices"
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// TestGateReplacements: a replacement marked before the rule's maxHold is early; more of a
// rule's nodes marked and not yet deleted at once than its maxReplacing is over the budget
// (once per rule); a replacement after its hold, within the budget, is neither; a re-gated
// (released) node is not judged for its hold; a rule with no budget is not judged.
func TestGateReplacements(t *testing.T) {
	start := time.Unix(1000, 0)
	at := marksEvery(start, time.Second)
	created := start
	budgets := map[string]ReplaceBudget{"gpu": {MaxHold: 10 * time.Second, MaxReplacing: 1}, "wide": {MaxHold: time.Second, MaxReplacing: 3}}
	rec := func(name, rule string, replacing, deleted uint64) record.NodeRecord {
		r := record.NodeRecord{Name: name, CreatedAt: created, ReplacingRule: rule, Replacing: at(replacing)}
		if deleted > 0 {
			r.Deleted = at(deleted)
		}
		return r
	}
	for _, tt := range []struct {
		name string
		recs []record.NodeRecord
		want []string // kind:node, in order
	}{
		{name: "one after its hold, deleted", recs: []record.NodeRecord{rec("a", "gpu", 11, 20)}},
		{name: "in turn", recs: []record.NodeRecord{rec("a", "gpu", 11, 20), rec("b", "gpu", 21, 30)}},
		{name: "early", recs: []record.NodeRecord{rec("a", "gpu", 9, 20)}, want: []string{KindReplacedEarly + ":a"}},
		{name: "two at once", recs: []record.NodeRecord{rec("a", "gpu", 11, 20), rec("b", "gpu", 12, 30), rec("c", "gpu", 13, 0)},
			want: []string{KindReplacingOverBudget + ":"}},
		{name: "two at once, under rules of their own", recs: []record.NodeRecord{rec("a", "gpu", 11, 20), rec("b", "wide", 12, 30)}},
		{name: "a re-gated node is not judged for its hold", recs: func() []record.NodeRecord {
			r := rec("a", "gpu", 5, 20)
			r.Released = at(3)
			return []record.NodeRecord{r}
		}()},
		{name: "no budget for its rule", recs: []record.NodeRecord{rec("a", "other", 1, 0), rec("b", "other", 2, 0)}},
		{name: "not replaced", recs: []record.NodeRecord{{Name: "a", Deleted: at(5)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Replacements(tt.recs, start, budgets)
			if len(got) != len(tt.want) {
				t.Fatalf("violations %v, want %v", got, tt.want)
			}
			for i, v := range got {
				if v.Kind+":"+v.Node != tt.want[i] {
					t.Errorf("violation %d = %s:%s, want %s", i, v.Kind, v.Node, tt.want[i])
				}
			}
		})
	}
	if n := Replaced([]record.NodeRecord{rec("a", "gpu", 11, 0), {Name: "b"}}); n != 1 {
		t.Errorf("Replaced = %d, want 1", n)
	}
}

// TestReplacementReleases: each mark pairs with the earliest node created after it that no
// earlier mark took; a replacement never released counts for nothing, and a node created
// before the mark is never its replacement.
func TestReplacementReleases(t *testing.T) {
	start := time.Unix(1000, 0)
	at := marksEvery(start, time.Second)
	node := func(created, released, replacing uint64) record.NodeRecord {
		r := record.NodeRecord{Created: at(created)}
		if released > 0 {
			r.Released = at(released)
		}
		if replacing > 0 {
			r.Replacing = at(replacing)
		}
		return r
	}
	for _, tt := range []struct {
		name string
		recs []record.NodeRecord
		want []time.Duration
	}{
		{name: "none replaced", recs: []record.NodeRecord{node(1, 5, 0), node(2, 6, 0)}},
		{name: "one, its replacement released", recs: []record.NodeRecord{node(1, 0, 20), node(2, 5, 0), node(25, 40, 0)},
			want: []time.Duration{20 * time.Second}},
		{name: "two in turn, the replacements in order", recs: []record.NodeRecord{node(1, 0, 20), node(2, 0, 22), node(24, 30, 0), node(26, 50, 0)},
			want: []time.Duration{10 * time.Second, 28 * time.Second}},
		{name: "a replacement that never warmed", recs: []record.NodeRecord{node(1, 0, 20), node(25, 0, 0)}},
		{name: "no node launched after the mark", recs: []record.NodeRecord{node(1, 0, 20), node(2, 5, 0)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReplacementReleases(tt.recs); !slices.Equal(got, tt.want) {
				t.Errorf("ReplacementReleases = %v, want %v", got, tt.want)
			}
		})
	}
}

package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Observed is what the runner saw of a run beyond the records: its counters, how many
// Events of each expected reason were recorded, and the simulator's own errors.
type Observed struct {
	Counters scenario.Counters
	// Events counts Events by reason, for the reasons the scenario expects.
	Events map[string]int
	// EventsErr is why the Events could not be counted, if they could not.
	EventsErr error
	Errors    []string
	// NodeWrites counts the gate's successful Node writes (-1: not measured); RuleReleases
	// counts the rules' first releases, from the records.
	NodeWrites, RuleReleases int
	// Replaced counts the nodes the gate marked for replacement, from the records.
	Replaced int
}

// Expectations compares a run with the scenario's expect and says, one line each, what it
// failed. An empty list is a pass. It is the judge's whole decision: pure, over the
// verdict and what was observed.
func Expectations(v Verdict, exp scenario.Expect, obs Observed) []string {
	fails := violationFailures(v, exp)
	if v.Stuck != exp.Stuck {
		fails = append(fails, fmt.Sprintf("%d gated nodes never released, expected %d", v.Stuck, exp.Stuck))
	}
	fails = append(fails, counterFailures(obs.Counters, exp.AtLeast)...)
	fails = append(fails, eventFailures(exp, obs)...)
	if w := exp.WritesPerRelease; w > 0 && (obs.NodeWrites < 0 || obs.NodeWrites != w*obs.RuleReleases) {
		fails = append(fails, fmt.Sprintf("expected %d Node write(s) per rule release: %d writes for %d releases (-1: not measured)", w, obs.NodeWrites, obs.RuleReleases))
	}
	if exp.Replaced != nil && obs.Replaced != *exp.Replaced {
		fails = append(fails, fmt.Sprintf("%d nodes marked for replacement, expected %d", obs.Replaced, *exp.Replaced))
	}
	if len(obs.Errors) > 0 {
		fails = append(fails, fmt.Sprintf("%d simulator errors, first: %s", len(obs.Errors), obs.Errors[0]))
	}
	return fails
}

// violationFailures: none expected and some found, or some expected (a negative control)
// and none — or not exactly the kinds named — found.
func violationFailures(v Verdict, exp scenario.Expect) []string {
	have := KindsOf(v.Violations)
	switch {
	case exp.Violations == "none" && len(v.Violations) > 0:
		return []string{fmt.Sprintf("expected no violations, found %d (%s)", len(v.Violations), have)}
	case exp.Violations == "some" && len(v.Violations) == 0:
		return []string{"expected violations (negative control), found none: the checker must catch this"}
	case exp.Violations == "some" && len(exp.Kinds) > 0:
		want := append([]string(nil), exp.Kinds...)
		sort.Strings(want)
		if strings.Join(want, ",") != have {
			return []string{fmt.Sprintf("expected exactly the violation kinds %v, found %q", want, have)}
		}
	}
	return nil
}

// eventFailures: an expected reason never recorded, or a pair of reasons recorded unequally
// often. Events that could not be counted are one failure of the simulator's, said as such:
// a count of 0 there would blame the gate for a List that failed.
func eventFailures(exp scenario.Expect, obs Observed) []string {
	if len(exp.Events) == 0 && len(exp.EventsMatch) == 0 {
		return nil
	}
	if obs.EventsErr != nil {
		return []string{fmt.Sprintf("simulator error: could not count the expected Events: %v", obs.EventsErr)}
	}
	var fails []string
	for _, reason := range exp.Events {
		if obs.Events[reason] == 0 {
			fails = append(fails, fmt.Sprintf("expected a %s event, found none", reason))
		}
	}
	for _, m := range exp.EventsMatch {
		if a, b := obs.Events[m.Reason], obs.Events[m.Like]; a != b || a == 0 {
			fails = append(fails, fmt.Sprintf("expected as many %s events as %s events, at least one; found %d and %d", m.Reason, m.Like, a, b))
		}
	}
	return fails
}

func counterFailures(c, atLeast scenario.Counters) []string {
	var fails []string
	for _, b := range []struct {
		name      string
		got, want int
	}{
		{"early tolerating pods", c.EarlyToleratingPods, atLeast.EarlyToleratingPods},
		{"refused registrations", c.RegistrationsRefused, atLeast.RegistrationsRefused},
		{"denied bypass pods", c.BypassDenied, atLeast.BypassDenied},
		{"created bypass pods", c.BypassCreated, atLeast.BypassCreated},
		{"backfilled nodes", c.Backfilled, atLeast.Backfilled},
	} {
		if b.got < b.want {
			fails = append(fails, fmt.Sprintf("%s: %d, expected at least %d", b.name, b.got, b.want))
		}
	}
	return fails
}

// RuleReleases counts the rules' first releases: completion annotations set.
func RuleReleases(recs []record.NodeRecord) int {
	n := 0
	for _, r := range recs {
		seen := map[string]bool{}
		for _, c := range r.CompletedAt {
			key, v, _ := strings.Cut(c, "=")
			if v != "" && !seen[key] {
				seen[key] = true
				n++
			}
		}
	}
	return n
}

// Backfilled counts nodes that came up untainted and were tainted afterwards.
func Backfilled(recs []record.NodeRecord) int {
	n := 0
	for _, r := range recs {
		if !r.TaintedAtCreate && !r.Tainted.IsZero() {
			n++
		}
	}
	return n
}

// KindsOf lists the distinct kinds among vs, sorted and comma-separated.
func KindsOf(vs []Violation) string {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Kind] = true
	}
	kinds := make([]string, 0, len(seen))
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ",")
}

// Count is how many of vs are of kind.
func Count(vs []Violation, kind string) int {
	n := 0
	for _, v := range vs {
		if v.Kind == kind {
			n++
		}
	}
	return n
}

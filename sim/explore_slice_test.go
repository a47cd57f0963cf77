package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/explore"
	"github.com/startupgate/startupgate/sim/scenario"
)

// TestExploreSlice is make test's seeded slice of make explore: two scenarios, one case of
// every kind each (crash points at their first write, before and after), on the suite's
// plane, and every negative control of the exploration's invariants. No case may break
// an invariant, and every control must be caught.
func TestExploreSlice(t *testing.T) {
	t.Parallel()
	all, err := scenario.LoadAll([]string{"../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	var bases []*scenario.Scenario
	for _, sc := range all {
		if sc.Name == "node-reboot-regate" || sc.Name == "rule-renamed-rekeyed" {
			bases = append(bases, sc)
		}
	}
	if len(bases) != 2 {
		t.Fatalf("found %d of the slice's 2 scenarios", len(bases))
	}
	rc, plane := sim.SharedPlane(t)
	run := explore.SimRunner(rc, plane)
	ctx := context.Background()
	writes, results := explore.Baselines(ctx, bases, 1, 2, run, nil, nil)
	cases := explore.Plan(bases, writes, 1, 0, 1)
	results = append(results, explore.RunAll(ctx, cases, 2, run, nil)...)
	controls := explore.Controls(all)
	var ccases []explore.Case
	for _, c := range controls {
		ccases = append(ccases, c.Case)
	}
	ran := explore.RunAll(ctx, ccases, 2, run, nil)
	for i := range ran {
		ran[i].Control = controls[i].Control
	}
	results = append(results, ran...)
	var sb strings.Builder
	explore.Table(&sb, results)
	t.Logf("%d cases, %d controls:\n%s", len(cases), len(controls), sb.String())
	if len(cases) < 2*len(explore.Kinds) || len(controls) < 5 {
		t.Errorf("%d cases and %d controls; want every kind for both scenarios and every control", len(cases), len(controls))
	}
	for _, r := range results {
		switch {
		case r.Control == "" && r.Violated():
			t.Errorf("%s %s (%s): %v %s", r.Case.Kind, r.Case.Base, r.Case.What, r.Outcome.Failures, r.Err)
		case r.Control != "" && !r.Caught():
			t.Errorf("negative control %s (%s: %s) not caught: %+v %s", r.Control, r.Case.Base, r.Case.What, r.Outcome, r.Err)
		}
	}
}

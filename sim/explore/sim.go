package explore

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/report"
)

// SimRunner runs cases through the simulator's runner on the plane at rc (plane: the
// embedded one, when that is the backend), with the gate in this process, and reads the
// gate's Node writes once each run has settled.
func SimRunner(rc *rest.Config, plane *controlplane.Embedded) Runner {
	return func(ctx context.Context, c Case) (Outcome, error) {
		var o Outcome
		mode := gateundertest.InProcess
		if c.Off {
			mode = gateundertest.Off
		}
		r, err := sim.NewRunner(rc, sim.Options{Gate: mode, Plane: plane, Hooks: &sim.Hooks{
			Settled: func(_ context.Context, l sim.Live) error {
				o.Node, o.NodeWrites = l.Gate().MostWrittenNode()
				o.Writes = int(l.Gate().NodeWrites())
				return nil
			},
		}})
		if err != nil {
			return Outcome{}, err
		}
		res, err := r.RunSeed(ctx, c.Scenario, c.Seed)
		if err != nil {
			return Outcome{}, err
		}
		o.Passed, o.Failures = res.Passed, res.Failures
		if len(c.Unjudged) > 0 {
			o.Passed, o.Failures = judgedOnly(res, c.Unjudged)
		}
		return o, nil
	}
}

// judgedOnly judges a run by its violations of the kinds not in unjudged, and its errors:
// the scenario's expectations (no node stuck) were written for the rules before the edit.
func judgedOnly(res *report.Result, unjudged []string) (bool, []string) {
	var failures []string
	for _, v := range res.Violations {
		if !slices.Contains(unjudged, v.Kind) {
			failures = append(failures, fmt.Sprintf("%s node=%s %s", v.Kind, v.Node, v.Detail))
		}
	}
	for _, e := range res.Errors {
		failures = append(failures, "simulator error: "+e)
	}
	return len(failures) == 0, failures
}

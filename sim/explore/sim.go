package explore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/report"
)

// Quiet ends a run whose edits take a rule's hold away on purpose once its node records
// have not changed for this long: well past the explorer's orphan grace (prepare), so that
// the lift of an orphan is seen. Such a run's nodes may stay held with no rule holding them,
// which it does not judge, and waited out its timeout: a third of the transitions did.
const Quiet = 10 * time.Second

// SimRunner runs cases through the simulator's runner on the plane at rc (plane: the
// embedded one, when that is the backend), with the gate in this process, and reads the
// gate's Node writes once each run has settled.
func SimRunner(rc *rest.Config, plane *controlplane.Embedded) Runner {
	return func(ctx context.Context, c Case) (Outcome, error) {
		var (
			o    Outcome
			down []gateundertest.Down
		)
		mode := gateundertest.InProcess
		if c.Off {
			mode = gateundertest.Off
		}
		var apiLog string
		var from int64
		if plane != nil {
			apiLog = plane.APIServerLog()
			from = controlplane.LogSize(apiLog)
		}
		var quiet time.Duration
		if slices.Contains(c.Unjudged, check.KindStuck) {
			quiet = Quiet
		}
		r, err := sim.NewRunner(rc, sim.Options{Gate: mode, Plane: plane, QuietFor: quiet, Hooks: &sim.Hooks{
			Settled: func(_ context.Context, l sim.Live) error {
				o.Node, o.NodeWrites = l.Gate().MostWrittenNode()
				o.Writes = int(l.Gate().NodeWrites())
				down = l.Gate().DownWindows()
				if wh := l.Gate().WebhookRelay(); wh != nil && apiLog != "" {
					f, err := controlplane.FailOpensSince(apiLog, from, wh.Addr()+gate.PodGuardPath)
					if err != nil {
						return err
					}
					o.GuardTimedOut, o.GuardUnreached = f.TimedOut, f.Unreached
				}
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
		for _, v := range res.Violations {
			o.Violations = append(o.Violations, fmt.Sprintf("%s node=%s pod=%s rv=%d at=%dms %s", v.Kind, v.Node, v.Pod, v.RV, v.AtMS, v.Detail))
		}
		if len(c.Unjudged) > 0 || len(c.DownOnly) > 0 || len(c.UntaintedOnly) > 0 {
			o.Passed, o.Failures = judgedOnly(res, c, down)
		}
		return o, nil
	}
}

// judgedOnly judges a run by its violations, but those of the kinds the case leaves
// unjudged (for the whole run, while the gate was down, or on nodes that registered
// untainted), by its nodes never released, unless the case leaves that unjudged, and by its
// errors. The scenario's timing expectations are not judged: a perturbation may take a
// release past them.
func judgedOnly(res *report.Result, c Case, down []gateundertest.Down) (bool, []string) {
	untainted, bypass := map[string]bool{}, map[string]bool{}
	records := map[string]*record.NodeRecord{}
	for i, rec := range res.Records {
		untainted[rec.Name] = untainted[rec.Name] || !rec.TaintedAtCreate
		records[rec.Name] = &res.Records[i]
		for _, b := range rec.Bindings {
			bypass[b.Pod] = bypass[b.Pod] || b.Bypass
		}
	}
	var failures []string
	for _, v := range res.Violations {
		at := res.Start.Add(time.Duration(v.AtMS) * time.Millisecond)
		if slices.Contains(c.Unjudged, v.Kind) || slices.Contains(c.DownOnly, v.Kind) && during(at, down) ||
			slices.Contains(c.UntaintedOnly, v.Kind) && untainted[v.Node] ||
			bypassedWhileDown(c, v, bypass[v.Pod], at, down) ||
			v.Kind == check.KindHeldAfterReinit && len(c.DownOnly) > 0 && secondRebootUnseen(records[v.Node], v, at, down) {
			continue
		}
		failures = append(failures, fmt.Sprintf("%s node=%s %s", v.Kind, v.Node, v.Detail))
	}
	if res.Stuck > 0 && !slices.Contains(c.Unjudged, check.KindStuck) {
		failures = append(failures, fmt.Sprintf("%d gated nodes never released, expected 0", res.Stuck))
	}
	for _, e := range res.Errors {
		failures = append(failures, "simulator error: "+e)
	}
	return len(failures) == 0, failures
}

// bypassedWhileDown reports whether v is a Pod created bound (past the scheduler) onto a
// held node while the case had the gate down: the Pod guard is that Pod's only check, and
// it fails open (failurePolicy Ignore, as shipped), the trade concepts.md names for a
// cluster that can still start Pods while the gate is down. A Pod the scheduler bound
// there is judged: the taint holds it off with the gate down too.
func bypassedWhileDown(c Case, v check.Violation, bypass bool, at time.Time, down []gateundertest.Down) bool {
	return bypass && v.Kind == check.KindEarlyPod && len(c.DownOnly) > 0 && during(at, down)
}

// secondRebootUnseen reports whether v, a node held after its re-initialisation, is the
// limit concepts.md names "a second reboot and its warm-up, unseen, while re-gated": the
// node rebooted again while re-gated for the reboot before, and its init Pods were Ready on
// the new boot (at) while a crash point had the gate down, or just after its restart. The
// readiness the gate then finds may be either boot's, and counts as the earlier one's.
func secondRebootUnseen(rec *record.NodeRecord, v check.Violation, at time.Time, down []gateundertest.Down) bool {
	if rec == nil || !during(at, down) {
		return false
	}
	for i := 1; i < len(rec.Reboots); i++ {
		rb, prev := rec.Reboots[i], rec.Reboots[i-1]
		if rb.Reinit.RV != v.RV {
			continue
		}
		regated := !prev.Regated.IsZero() && prev.Regated.RV < rb.Seen.RV
		return regated && (prev.Reinit.IsZero() || prev.Reinit.RV > rb.Seen.RV)
	}
	return false
}

// during reports whether t falls in one of the windows in which a crash point had the gate
// down, or within DownSlack after one.
func during(t time.Time, down []gateundertest.Down) bool {
	return slices.ContainsFunc(down, func(d gateundertest.Down) bool {
		return !t.Before(d.From) && !t.After(d.To.Add(DownSlack))
	})
}

package step

import (
	"context"
	"fmt"
	"reflect"

	"github.com/startupgate/startupgate/sim/faults"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Step is one timeline action, ready to run. Run returns when the action is done; a step
// with a duration (a fault's window, a suspension) returns at its end, or when ctx ends.
type Step interface {
	Run(ctx context.Context, env Env) error
}

// New is the step that carries out action, a pointer to one of scenario.Step's action
// types, or an error for a type no step carries out.
func New(action any) (Step, error) {
	t := reflect.TypeOf(action)
	for _, k := range kinds() {
		if k.action == t {
			return k.build(action), nil
		}
	}
	return nil, fmt.Errorf("no action the runner knows (%T)", action)
}

// kinds are the step kinds, each by the scenario action it carries out: the one list a new
// kind is added to. TestEveryStepKindRuns holds it to scenario.Step.Actions.
func kinds() []kind {
	return []kind{
		of(func(a *scenario.Join) Step { return join{a} }),
		of(func(a *scenario.Reregister) Step { return reregister{a} }),
		of(func(a *scenario.Scale) Step { return scale{a} }),
		of(func(a *scenario.NodeDelete) Step { return nodeDelete{a} }),
		of(func(a *scenario.Relabel) Step { return relabel{a} }),
		of(func(a *scenario.InitPod) Step { return initPod{a} }),
		of(func(a *scenario.NodeCondition) Step { return nodeCondition{a} }),
		of(func(a *scenario.KubeletStop) Step { return kubeletStop{a} }),
		of(func(a *scenario.Reboot) Step { return reboot{a} }),
		of(func(a *scenario.SuspendRule) Step { return suspendRule{a} }),
		of(func(a *scenario.EditRule) Step { return editRule{a} }),
		of(func(a *scenario.PauseAutoscaler) Step { return pauseAutoscaler{a} }),
		of(func(a *scenario.CrashAtWrite) Step { return crashAtWrite{a} }),
		of(func(a *scenario.WatchDelay) Step { return watchDelay{a} }),
		fault(faults.WebhookOutage),
		fault(faults.WebhookLatency),
		fault(faults.GateCrash),
		fault(faults.LeaderFailover),
		fault(faults.TaintWriters),
		fault(faults.APIServerRestart),
		fault(faults.WatchDrops),
		fault(faults.DeleteInitDaemonSet),
		fault(faults.BypassPods),
	}
}

// kind builds the step of one scenario action type.
type kind struct {
	action reflect.Type
	build  func(action any) Step
}

// of is the kind whose steps build makes from an action of type *A.
func of[A any](build func(*A) Step) kind {
	return kind{action: reflect.TypeFor[*A](), build: func(a any) Step { return build(a.(*A)) }}
}

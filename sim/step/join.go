package step

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/startupgate/startupgate/sim/check"
	"github.com/startupgate/startupgate/sim/scenario"
)

// join registers the nodes of a join step: all at once (bounded concurrency) or one per
// interval. A failed registration is retried every 500ms, as a kubelet would.
type join struct{ *scenario.Join }

// Run registers the nodes, and returns once each is registered or ctx ends.
func (j join) Run(ctx context.Context, env Env) error {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < j.Count; i++ {
		name := env.Scenario().NodeName(j.Prefix, i)
		env.State().joining(name, j.Join)
		if j.Interval > 0 && i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(j.Interval):
			}
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			register(ctx, env, name, j.Join)
		}()
	}
	wg.Wait()
	return nil
}

// registrar is what a registration reaches.
type registrar interface {
	Log
	State() *State
	Kubelet() Kubelet
}

func register(ctx context.Context, env registrar, name string, j *scenario.Join) {
	for {
		err := env.Kubelet().Register(ctx, name, j.Labels, j.CoreTaints(), j.ReadyAfter)
		if err == nil {
			env.State().registered(1)
			return
		}
		if apierrors.IsAlreadyExists(err) {
			env.Fail(err)
			return
		}
		var pool *check.Violation
		if j.GatePool {
			pool = &check.Violation{Kind: check.KindGatePoolRefused, Node: name,
				AtMS: time.Since(env.Start()).Milliseconds(), Detail: "a node of the pool the gate runs on was refused registration: " + err.Error()}
		}
		env.State().refusedOne(pool)
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

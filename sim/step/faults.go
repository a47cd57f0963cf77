package step

import (
	"context"

	"github.com/startupgate/startupgate/sim/faults"
)

// A fault step is carried out by sim/faults, through what the faults' Env hands it; the
// fault is one function there, so it needs no file of its own here.
type faultStep[A any] struct {
	action *A
	run    func(context.Context, *faults.Env, *A) error
}

// Run carries out the fault through the faults' Env.
func (f faultStep[A]) Run(ctx context.Context, env Env) error {
	return f.run(ctx, env.Faults(), f.action)
}

// fault is the kind of the fault step that run carries out.
func fault[A any](run func(context.Context, *faults.Env, *A) error) kind {
	return of(func(a *A) Step { return faultStep[A]{action: a, run: run} })
}

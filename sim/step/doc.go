// Package step carries out a scenario's timeline steps: one type per step kind, one file
// each, behind one small interface (Step). New builds the step for a scenario action from
// the one list of kinds (kinds), so that the runner dispatches on no kind of its own.
//
// A step reaches the run only through Env, which sim's run implements: a few small
// interfaces (the API and the scenario, the run's notes and errors, the fake kubelet, the
// gate under test, the recorder, the autoscaler, the faults' Env) and State, what the steps
// remember for the steps after them and for the runner. Fault steps hand their work to
// sim/faults. A step must not judge: what it breaks or changes, sim/check has to find.
package step

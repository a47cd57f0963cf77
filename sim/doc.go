// Package sim is the runner of one scenario run, and nothing else. It ties the simulator's
// packages together along the data path:
//
//	scenario ──▶ kubelet ──▶ control plane ◀── gate under test, faults
//	                              │
//	                           record ──▶ check ──▶ report
//
// A run creates the scenario's objects (sim/scenario builds them, sim/objects creates
// them), starts the recorder (sim/record/watch), the gate under test (sim/gateundertest)
// and the fake kubelet (sim/kubelet), plays the timeline — each step carried out by
// sim/step, with the run as its step.Env: node joins through the kubelet, faults through
// sim/faults — until the run settles or times out, waits for the recorder's barrier, and
// hands the records to sim/check to be judged into a report.Result. The root holds no step
// kind's logic: a new kind needs a step in sim/step, not a case here.
//
// To judge a run (judge.go) is to hand its per-node records and what else it observed to
// sim/check, which finds the violations and compares them with the scenario's expect. The
// floor is not a gate but the benchmark's yardstick: a trivial controller that removes the
// taint as soon as an init Pod is Ready (see sim/gateundertest). docs/simulator.md#glossary
// defines these and the simulator's other words.
//
// It holds no decision of its own: what a scenario means is sim/scenario's, what counts as
// a violation is sim/check's. The benchmark (sim/bench) drives the same runner through
// Hooks.
package sim

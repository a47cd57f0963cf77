// Package sim is the runner of one scenario run, and nothing else. It ties the simulator's
// packages together along the data path:
//
//	scenario ──▶ kubelet ──▶ control plane ◀── gate under test, faults
//	                              │
//	                           record ──▶ check ──▶ report
//
// A run creates the scenario's objects (sim/scenario builds them), starts the recorder
// (sim/record), the gate under test (sim/gateundertest) and the fake kubelet
// (sim/kubelet), plays the timeline — node joins through the kubelet, faults through
// sim/faults — until the run settles or times out, waits for the recorder's barrier, and
// hands the records to sim/check to be judged into a report.Result.
//
// It holds no decision of its own: what a scenario means is sim/scenario's, what counts as
// a violation is sim/check's. The benchmark (sim/bench) drives the same runner through
// Hooks.
package sim

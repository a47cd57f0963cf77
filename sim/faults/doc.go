// Package faults injects what goes wrong in real clusters, one function per fault step:
// webhook outages and latency, a crashed gate, a leader failover, competing taint writers,
// an apiserver restart, dropped watches, a deleted init DaemonSet, Pods that bypass the
// scheduler.
//
// A fault acts through what Env hands it — the relays in front of the webhook and the
// apiserver, the gate's replicas, the plane, the API — never on the gate's code or state.
// Faults with a duration undo themselves. It must not judge: whatever a fault breaks, the
// checker has to catch on its own.
package faults

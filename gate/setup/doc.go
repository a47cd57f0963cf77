// Package setup wires the gate into a controller-runtime manager: the cache (Nodes,
// DaemonSets, and only the init Pods, trimmed), the release controller, the toleration
// check, backfill, the webhooks and the health checks. cmd/gate and the simulator both
// build the gate through NewManager, so the simulator always runs the wiring that ships.
//
// It decides nothing: every decision is the gate package's (and, pure, gate/rule's).
package setup

// Package gate is startupgate's production half: it keeps new Nodes free of workload Pods
// until their initialization DaemonSet Pods are done.
//
// The race it exists to close is short and real. A reactive controller that taints a Node
// after seeing it created loses to the scheduler whenever Pods are already pending: the Node
// becomes schedulable the moment it reports Ready, often before any controller has reacted.
// So the gate adds its NoSchedule taint inside the Node's CREATE — by a mutating webhook
// (webhook.go) or by the equivalent MutatingAdmissionPolicy (gate/policy) — and the taint is
// part of the Node from its first stored version. A controller (controller.go) then removes
// it once a pure decision (gate/rule) says the node's init Pods are ready, in one write
// guarded by resourceVersion (nodewriter.go) that also records completedAt. Nodes that came
// up without the taint are backfilled while idle (backfill.go).
//
// All state lives in the API: the taint and the completedAt annotation. A restarted or
// failed-over gate picks up where the last one stopped.
//
// The package is a library; the rules themselves, pure, are in gate/rule, the admission
// policy's rendering in gate/policy, and the wiring into a controller-runtime manager in
// gate/setup, which cmd/gate and the simulator (sim/) both call, so the simulator always
// exercises exactly the wiring that ships.
package gate

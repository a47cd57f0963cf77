// Package check judges a run: the invariants over the recorded nodes, then the scenario's
// expect. Records and the scenario in, violations and failures out.
//
// It is pure. It imports no client and no control plane and reads no clock; everything it
// knows arrives as an argument, so its tests are tables of synthetic records. It knows
// nothing of the gate's code either: it reads only what the API showed (through
// sim/record), so that a gate bug cannot hide itself by being judged by its own logic.
//
// Invariants: no Pod that does not tolerate the startup taint is bound to a gated node
// before its release; no release before the init Pods were ready (unless the max hold ran
// out under the release policy) or before the minimum hold; none later than its bound; no
// foreign taint lost; completedAt never rewritten; backfill never taints a busy node.
// "Before" is decided by etcd resourceVersions, never by when events arrived.
package check

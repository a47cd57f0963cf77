// Package gateundertest runs the gate a scenario tests, in one of its modes, and is where
// gate-side faults act:
//
//   - in-process: setup.NewManager, the very setup cmd/gate runs, with its webhook on a real
//     TLS port registered from deploy/base/webhook.yaml;
//   - process: the built cmd/gate binary, leader-elected, so that it can be killed;
//   - policy: the MutatingAdmissionPolicy that config.Config renders, with the controller;
//   - floor: not a gate but a yardstick, a deliberately trivial controller in a process of
//     its own that removes the taint once an init Pod on the node is Ready, with no rules,
//     holds or leader election: the least any release can cost on this plane, to which the
//     benchmark compares the gate (docs/simulator.md#glossary);
//   - off: no gate at all, the negative control.
//
// It never runs a copy of the gate: every mode but floor and off starts the gate package's
// own code. It must not judge a run or drive the timeline.
package gateundertest

// Package gateundertest runs the gate a scenario tests, in one of its modes, and is where
// gate-side faults act:
//
//   - in-process: setup.NewManager, the very setup cmd/gate runs, with its webhook on a real
//     TLS port registered from deploy/base/webhook.yaml;
//   - process: the built cmd/gate binary, leader-elected, so that it can be killed;
//   - policy: the MutatingAdmissionPolicy that config.Config renders, with the controller;
//   - floor: a deliberately trivial reference controller in a process of its own, the
//     benchmark's yardstick for what any release costs on this plane;
//   - off: no gate at all, the negative control.
//
// It never runs a copy of the gate: every mode but floor and off starts the gate package's
// own code. It must not judge a run or drive the timeline.
package gateundertest

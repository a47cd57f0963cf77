// Package record holds what the simulator knows about each node incarnation: when it was
// created and tainted, when its init Pods became ready, when it was released, and every Pod
// binding, each stamped with the resourceVersion of the write. It is pure (no client), so
// that sim/check, which judges these records, needs none either.
//
// The records are filled by sim/record/watch, which watches the API. Neither judges (that
// is sim/check), and neither reads the gate's code to decide what ready means (PodIsReady
// is the simulator's own reading): a gate bug must not be able to hide itself.
package record

// Package record turns what the API shows into per-node records: for each node
// incarnation, when it was created and tainted, when its init Pods became ready, when it
// was released, and every Pod binding, each stamped with the resourceVersion of the write.
//
// It watches through informers (a dropped watch re-lists instead of losing events) and
// offers a barrier: a run is judged only once both streams have caught up with a write
// made after the run. It reads and records; it must not judge (that is sim/check), and it
// must not read the gate's code to decide what ready means — its own reading keeps a gate
// bug from hiding itself.
package record

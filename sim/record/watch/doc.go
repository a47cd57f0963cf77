// Package watch fills sim/record's per-node records from the API: it watches Nodes and Pods
// through informers (a dropped watch re-lists instead of losing events) and offers a
// barrier, so that a run is judged only once both streams have caught up with a write made
// after the run. It reads and records; judging is sim/check's.
package watch

// Package objects creates the Kubernetes objects of one scenario run (built by
// sim/scenario: its namespace, init DaemonSets and pending workloads), counts the Events
// about them for the judge, and removes them and the run's Nodes when the run is done.
//
// It knows the API and the scenario, nothing of the gate or the records: what a run's
// objects mean is sim/check's to judge.
package objects

// Package kubelet fakes the kubelets of a scenario's nodes, in the spirit of KWOK.
//
// It registers each Node with a real CREATE, so that admission (the gate's webhook or its
// policy) runs as it would for a real kubelet; reports the node Ready; renews its Lease;
// and drives the status of the Pods bound to its nodes: init Pods follow their scenario
// timeline (ready after a seeded delay, never, crash-loop, annotate, flap), every other
// Pod goes Running and Ready at once.
//
// It plays the node's side only. It must not judge a run, know what the gate decided, or
// take any shortcut a real kubelet could not: every effect goes through the API.
package kubelet

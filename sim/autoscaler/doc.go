// Package autoscaler runs a real autoscaler as a part of the plane: Karpenter's KWOK
// provider (sigs.k8s.io/karpenter/kwok), as a child process against the plane's apiserver.
//
// Karpenter is built by hack/karpenter.sh, from the Go module proxy, in a module of its own
// held to startupgate's Kubernetes libraries (it asks for older ones and builds with ours), so
// that it shares the plane's compiled packages and never sets startupgate's. Its KWOK
// provider creates each Node itself with a real CREATE (so the gate's admission runs as for
// any node), and nothing plays the kubelet of those Nodes: the fake kubelet adopts them
// (kubelet.Kubelet.Adopt with kubelet.KWOKNodeLabel).
//
// It must not know what a scenario, a gate or a record is: it builds Karpenter, starts it
// with its CRDs and instance types, writes the objects it reads, stops it inside a Node
// CREATE when asked (RegistrationPause), and stops it.
package autoscaler

package rule

import corev1 "k8s.io/api/core/v1"

// Karpenter's labels of a node's lifecycle: registered once it has merged the NodePool's
// labels and startupTaints into the Node, initialized once the node is Ready and every
// startupTaint is gone.
const (
	KarpenterRegisteredLabel  = "karpenter.sh/registered"
	KarpenterInitializedLabel = "karpenter.sh/initialized"
	// KarpenterDoNotSyncTaintsLabel on a node tells Karpenter not to write its NodePool's
	// taints and startupTaints onto the Node at registration.
	KarpenterDoNotSyncTaintsLabel = "karpenter.sh/do-not-sync-taints"
)

// AwaitingStartupTaints reports whether an autoscaler has registered the node and waits for
// its startup taints to go before it calls the node initialized. Karpenter writes its
// NodePool's startupTaints when it registers a node, and a node the gate released before
// that (Karpenter was slow or restarting) gets the gate's taint back then. On such a node
// the taint is the autoscaler's copy of the gate's, and the gate's to take off again. An
// operator's taint by hand comes on a node that is already initialized, and a rule's own
// re-gate after a reboot is marked by its regatedAt annotation: neither is touched. Nor is
// a node labelled do-not-sync-taints, onto which Karpenter writes no taint back.
func AwaitingStartupTaints(n *corev1.Node) bool {
	return n.Labels[KarpenterRegisteredLabel] == "true" && n.Labels[KarpenterInitializedLabel] != "true" &&
		n.Labels[KarpenterDoNotSyncTaintsLabel] != "true"
}

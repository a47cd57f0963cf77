// Package node runs real Kubernetes nodes on this machine, beside a plane: for each, a
// kubelet built from the plane's release, containerd 2 with runc, and a CNI bridge of its
// own. Where the fake kubelet (sim/kubelet) registers Nodes and writes Pod status for
// thousands of nodes at once, a real node starts real containers from images imported out
// of tarballs (nothing is pulled), runs their probes, and reports what a user's kubelet
// reports. It is how the gate meets a real kubelet.
//
// It needs root, cgroups it can write, overlayfs and iptables; Unsupported names what is
// missing, so a test can skip on a machine without them. The parts are built by
// hack/node.sh (make node) into a per-user cache.
//
// Every node keeps its state under its own directory and its own names (bridge, cgroup
// root, ports), so that two nodes, or two runs, do not collide; Stop removes it all
// (containers through the CRI, so the CNI plugins release what they set up, then mounts,
// cgroups and the bridge), and Sweep removes what a killed run left behind.
package node

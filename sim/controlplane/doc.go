// Package controlplane owns the control planes the simulator runs against, and the relays
// that faults act through.
//
//   - Embedded (the default): etcd and kube-apiserver through envtest, plus a real
//     kube-scheduler and kube-controller-manager as child processes, from the pinned
//     binaries that `make controlplane` builds into a per-user cache. Every child dies
//     with this process, even on kill -9.
//   - Kubeconfig: any existing cluster. Kind: creates a kind cluster, then behaves as
//     Kubeconfig (it needs a container engine).
//   - Relay: a TCP relay that carries TLS untouched; a webhook outage, latency or a watch
//     drop is the relay refusing, delaying or cutting connections, never a change to the
//     gate or the apiserver.
//
// It must not know what a scenario, a gate or a record is: it brings a plane up, breaks
// connections when told, and tears everything down.
package controlplane

package node

import (
	"fmt"
	"path/filepath"
)

// containerdConfig: containerd 2's configuration (version 3) for one node, every path under
// its own directory. What differs from the defaults, and why:
//   - restrict_oom_score_adj: these machines withhold CAP_SYS_RESOURCE, so runc cannot
//     lower a sandbox's oom_score_adj to the kubelet's -998 and dies; this caps the request
//     at containerd's own;
//   - netns_mounts_under_state_dir: the Pods' network namespaces live under the node's
//     state directory, not in the host's /run/netns, so teardown finds them;
//   - the NRI plugin is off: its socket has one fixed path, which two nodes would share;
//   - runc's state root is the node's too, and the sandbox image is ours, never pulled.
func containerdConfig(dir, parts string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins]
  [plugins.'io.containerd.nri.v1.nri']
    disable = true

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[5]q

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %[6]q
          Root = %[7]q
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%[8]q]
      conf_dir = %[9]q
`,
		filepath.Join(dir, "containerd", "root"), filepath.Join(dir, "containerd", "state"),
		socket(dir), socket(dir)+".ttrpc", SandboxImage,
		filepath.Join(parts, "runc"), filepath.Join(dir, "runc"),
		filepath.Join(parts, "cni"), filepath.Join(dir, "cni"))
}

// socket is the node's containerd socket.
func socket(dir string) string { return filepath.Join(dir, "containerd.sock") }

// cniConfig: a bridge of the node's own with its Pod subnet, and the bridge as the Pods'
// default gateway, so that they reach ClusterIPs (kube-proxy's rules on this machine). No
// masquerading and no port maps, so the plugins write no iptables rules a killed run could
// leave behind; the Pods talk to this machine, which is all a node here needs.
func cniConfig(bridge, subnet, ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %[1]q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[1]q,
      "isDefaultGateway": true,
      "ipMasq": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %[2]q}]], "dataDir": %[3]q}
    }
  ]
}
`, bridge, subnet, ipamDir)
}

// kubeletConfig: the kubelet's configuration for one node. What differs from the defaults,
// and why:
//   - failCgroupV1 false: these machines mount cgroup v1, which 1.36 refuses by default;
//   - cgroupfs and a cgroup root of the node's own, so two nodes' kubepods do not meet;
//   - failSwapOn false: the machine may have swap;
//   - it serves its API on the node's InternalIP and a port of its own (Node.kubeletPort),
//     its health check on a loopback address of its own; the API takes only callers with
//     a certificate of this process's CA (the apiserver's kubelet client, the tests':
//     servingcert), no anonymous one, and allows them everything (AlwaysAllow);
//   - no eviction thresholds: the disk and memory are the machine's, shared with everything
//     else, and a node evicting its Pods for the machine's state would prove nothing;
//   - no image garbage collection (a high threshold of 100): on a disk fuller than 85% the
//     kubelet deletes unused images, and an imported image cannot be pulled back;
//   - the kubelet manages no iptables chains of its own;
//   - the Pods' logs are kept in the node's directory, not the machine's /var/log/pods.
func kubeletConfig(c kubeletSettings) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]q
failSwapOn: false
containerRuntimeEndpoint: %[2]q
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzBindAddress: %[8]s
healthzPort: %[5]d
podCIDR: %[6]q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[9]q}
authorization:
  mode: AlwaysAllow
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
resolvConf: ""
registerNode: true
podLogsDir: %[7]q
`, c.cgroupRoot, "unix://"+c.socket, c.address, c.port, kubeletHealthzPort, c.podCIDR, c.podLogs, c.healthz, c.clientCA)
}

// The kubelet's ports: its API's on the node's InternalIP, one per node from the base
// (Node.kubeletPort), and its health check's, the usual one, on a loopback address of the
// node's own.
const (
	kubeletPortBase    = 11250
	kubeletHealthzPort = 10248
)

// kubeletSettings are what differs between two nodes' kubelets.
type kubeletSettings struct {
	cgroupRoot, socket, podCIDR, podLogs, address, healthz, clientCA string
	port                                                             int
}

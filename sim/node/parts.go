package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/startupgate/startupgate/sim/controlplane"
)

// PartsEnv names the directory hack/node.sh builds into; make sets it.
const PartsEnv = "STARTUPGATE_NODE_PARTS"

// ErrNoParts is returned when the node's binaries are not built.
var ErrNoParts = errors.New("a real node's parts are not built: run make node (hack/node.sh)")

// parts are the binaries hack/node.sh builds, relative to its directory.
var parts = []string{"kubelet", "kube-proxy", "kubectl", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "busybox",
	"cni/bridge", "cni/host-local", "cni/loopback"}

// PartsDir is the directory of the node's binaries: $STARTUPGATE_NODE_PARTS, or the cache
// path hack/node.sh uses.
func PartsDir() (string, error) {
	dir := os.Getenv(PartsEnv)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding the parts cache: %w", err)
		}
		dir = filepath.Join(cache, "startupgate", "node", controlplane.KubeVersion)
	}
	for _, p := range parts {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return "", fmt.Errorf("%w (no %s in %s)", ErrNoParts, p, dir)
		}
	}
	return dir, nil
}

// Unsupported names the first prerequisite of a real node this machine lacks, or returns ""
// when it has them all: root, overlayfs, writable cgroups and iptables.
func Unsupported() string {
	if os.Geteuid() != 0 {
		return "a real node needs root (the kubelet and containerd manage mounts, cgroups and network devices)"
	}
	fs, err := os.ReadFile("/proc/filesystems")
	if err != nil || !bytes.Contains(fs, []byte("\toverlay\n")) {
		return "a real node needs overlayfs (containerd's snapshotter); /proc/filesystems does not list it"
	}
	probe := filepath.Join(cgroupMount, "memory", "startupgate-probe")
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Sprintf("a real node needs writable cgroup v1 hierarchies under %s: %v", cgroupMount, err)
	}
	_ = os.Remove(probe)
	if _, err := exec.LookPath("iptables"); err != nil {
		return "a real node needs iptables (the kubelet's and the CNI plugins'); make node installs it"
	}
	return ""
}

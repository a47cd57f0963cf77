package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// registry holds, for each node index in use on this machine, the node's directory, so
// that Sweep can find what a killed run left behind. It is in /run: a reboot empties it,
// as it ends every process and mount the entries stand for.
const registry = "/run/startupgate/nodes"

// cgroupMount is where the cgroup hierarchies are mounted.
const cgroupMount = "/sys/fs/cgroup"

// Stop stops the kubelet, then removes the node's Pods through the CRI (so the CNI plugin
// releases their addresses and interfaces), stops containerd, and removes what is left:
// processes in the node's cgroups, the cgroups, mounts under its directory, and its bridge.
// The logs stay. Stop may be called again, and after a failed Start.
func (n *Node) Stop() error {
	if !n.registered {
		return nil
	}
	var errs []error
	if n.kubelet != nil {
		stop(n.kubelet, 10*time.Second)
		n.kubelet = nil
	}
	if n.containerd != nil {
		errs = append(errs, removeSandboxes(socket(n.dir)))
		stop(n.containerd, 10*time.Second)
		n.containerd = nil
	}
	errs = append(errs, clean(n.dir, n.cgroupRoot, n.bridge))
	for _, f := range n.logs {
		_ = f.Close()
	}
	n.logs = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping node %s: %w", n.cfg.Name, err)
	}
	if err := unregister(n.cfg.Index); err != nil {
		return err
	}
	n.registered = false
	return removeKubeletChains()
}

// kubeletChains are the iptables chains every kubelet makes, whatever its configuration
// (KUBE-FIREWALL drops martian packets to 127.0.0.0/8; the others tell which iptables
// backend is in use), by table. kube-proxy --cleanup leaves them: they are the kubelet's.
var kubeletChains = map[string][]string{
	"filter": {"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"},
	"mangle": {"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"},
	"nat":    {"KUBE-KUBELET-CANARY"},
}

// removeKubeletChains removes the kubelets' chains once no real node and no kube-proxy is
// left on this machine: they are shared by every node here, and a kubelet that still runs
// would make them again.
func removeKubeletChains() error {
	if !idle() {
		return nil
	}
	for _, builtin := range []string{"INPUT", "OUTPUT"} {
		// Once per jump: each kubelet and kube-proxy may have added its own.
		for exec.Command("iptables", "-t", "filter", "-D", builtin, "-j", "KUBE-FIREWALL").Run() == nil {
		}
	}
	var errs []error
	for table, chains := range kubeletChains {
		for _, chain := range chains {
			if !chainExists(table, chain) {
				continue
			}
			for _, op := range []string{"-F", "-X"} {
				if out, err := exec.Command("iptables", "-t", table, op, chain).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("iptables -t %s %s %s: %w: %s", table, op, chain, err, out))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// chainExists: the iptables chain is in the table.
func chainExists(table, chain string) bool {
	return exec.Command("iptables", "-t", table, "-n", "-L", chain).Run() == nil
}

// idle: no real node is registered on this machine, nor a kube-proxy.
func idle() bool {
	entries, err := os.ReadDir(registry)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(proxyLock) {
			return false
		}
	}
	return true
}

// stop sends SIGTERM, and SIGKILL to the process group after grace.
func stop(p *proc, grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// removeSandboxes stops and removes every Pod sandbox through containerd's CRI: stopping
// one runs the CNI DEL that releases its address and veth, and removing it deletes its
// containers, after which their shims exit.
func removeSandboxes(sock string) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing Pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stopping sandbox of %s: %w", sb.Metadata.GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox of %s: %w", sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// clean removes what a node leaves outside its processes: anything still running in its
// cgroups (a shim, a container), the cgroups, every mount under its directory (rootfs,
// volumes, network namespaces), and its bridge.
func clean(dir, cgroupRoot, bridge string) error {
	errs := []error{killCgroup(cgroupRoot), unmountUnder(dir), removeCgroup(cgroupRoot)}
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %w: %s", bridge, err, out))
		}
	}
	for _, d := range []string{"containerd", "kubelet", "runc", "ipam"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hierarchies are the cgroup directories a node's cgroup root is made in: the unified one
// on cgroup v2, else one per v1 hierarchy.
func hierarchies() ([]string, error) {
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return []string{cgroupMount}, nil
	}
	entries, err := os.ReadDir(cgroupMount)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if p := filepath.Join(cgroupMount, e.Name()); e.IsDir() && isMount(p) {
			dirs = append(dirs, p)
		}
	}
	return dirs, nil
}

// isMount: p is a mount point (its device differs from its parent's).
func isMount(p string) bool {
	var st, parent syscall.Stat_t
	return syscall.Stat(p, &st) == nil && syscall.Stat(filepath.Dir(p), &parent) == nil && st.Dev != parent.Dev
}

// makeCgroupRoot creates the node's cgroup root in every hierarchy: the kubelet refuses a
// root that does not exist. A new cpuset cgroup has no CPUs or memory nodes until given
// its parent's.
func makeCgroupRoot(root string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		p := filepath.Join(h, root)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", p, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(p, f), v, 0o644); err != nil {
					return fmt.Errorf("setting %s of %s: %w", f, p, err)
				}
			}
		}
	}
	return nil
}

// killCgroup sends SIGKILL to every process in the node's cgroups, and waits for them to go.
func killCgroup(root string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		for _, h := range hs {
			_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil //nolint:nilerr // a cgroup gone meanwhile has nothing to kill
				}
				left = append(left, pidsIn(filepath.Join(p, "cgroup.procs"))...)
				return nil
			})
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v in cgroup %s survived SIGKILL", left, root)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pidsIn reads a cgroup.procs file.
func pidsIn(path string) []int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeCgroup removes the node's cgroups, children before parents.
func removeCgroup(root string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount at or under dir, deepest first.
func unmountUnder(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists this mount namespace's mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		p := unescape(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space, and so on).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// register claims the node's index in the registry. An entry of a node whose containerd no
// longer runs is a killed run's: it is swept first. One whose containerd runs is another
// node's, and Start fails rather than share its bridge and cgroups.
func register(n *Node) error {
	if err := os.MkdirAll(registry, 0o755); err != nil {
		return err
	}
	entry := filepath.Join(registry, strconv.Itoa(n.cfg.Index))
	if old, err := os.ReadFile(entry); err == nil {
		if running(string(old)) {
			return fmt.Errorf("node index %d is in use by the node in %s", n.cfg.Index, old)
		}
		if err := sweep(n.cfg.Index, string(old)); err != nil {
			return err
		}
	}
	return os.WriteFile(entry, []byte(n.dir), 0o644)
}

// unregister gives the node's index back.
func unregister(index int) error {
	if err := os.Remove(filepath.Join(registry, strconv.Itoa(index))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Sweep removes what killed runs left behind: for every registered node whose containerd
// no longer runs, its shims and containers, cgroups, mounts and bridge; and the rules of a
// kube-proxy that no longer runs.
func Sweep() error {
	if err := sweepDeadProxy(); err != nil {
		return err
	}
	entries, err := os.ReadDir(registry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		index, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir, err := os.ReadFile(filepath.Join(registry, e.Name()))
		if err != nil || running(string(dir)) {
			continue
		}
		errs = append(errs, sweep(index, string(dir)))
	}
	return errors.Join(append(errs, removeKubeletChains())...)
}

// sweep removes a dead node's leftovers and its registry entry.
func sweep(index int, dir string) error {
	killShims(dir)
	if err := clean(dir, cgroupRootName(index), bridgeName(index)); err != nil {
		return fmt.Errorf("sweeping the node left in %s: %w", dir, err)
	}
	return unregister(index)
}

// running: a containerd with the node's configuration runs.
func running(dir string) bool {
	return len(processesWith(filepath.Join(dir, "containerd.toml"))) > 0
}

// killShims kills the shims of a dead node's containerd (they outlive it by design): they
// name its socket on their command line.
func killShims(dir string) {
	for _, pid := range processesWith(socket(dir)) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesWith lists the processes with arg among their command-line arguments.
func processesWith(arg string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(raw, []byte{0}) {
			if string(a) == arg {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

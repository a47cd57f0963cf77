package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/internal/servingcert"
)

// Config is one real node.
type Config struct {
	// Name is the Node's name.
	Name string
	// Index tells the node apart from every other real node on this machine at the same
	// time: its bridge, Pod subnet (10.244.Index.0/24) and cgroup root are named after it.
	// 1 to 254.
	Index int
	// Dir is the run's directory; the node keeps its state in a directory of its own there.
	Dir string
	// Kubeconfig is what the kubelet registers and reports with.
	Kubeconfig string
	// Labels are the Node's, set by the kubelet at registration.
	Labels map[string]string
}

// Node is a running real node: its containerd and kubelet.
type Node struct {
	cfg         Config
	ip          string // the node's InternalIP, HostIP
	dir         string
	parts       string
	bridge      string
	cgroupRoot  string
	containerd  *proc
	kubelet     *proc
	kubeletArgs []string
	logs        []*os.File
	// registered: the node holds its index in the registry, so its cgroups, bridge and
	// directory are its own to tear down. Without it Stop does nothing.
	registered bool
}

// Start starts the node's containerd, imports its images, then starts its kubelet, which
// registers the Node. It returns once the kubelet runs; the Node's readiness is the
// caller's to wait for. On failure everything it started is torn down.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Index < 1 || cfg.Index > 254 {
		return nil, fmt.Errorf("node %s: index %d is not in 1..254", cfg.Name, cfg.Index)
	}
	parts, err := PartsDir()
	if err != nil {
		return nil, err
	}
	// Absolute: its sockets are addresses, where a relative path would read as a host.
	dir, err := filepath.Abs(filepath.Join(cfg.Dir, "startupgate-node-"+cfg.Name))
	if err != nil {
		return nil, err
	}
	ip, err := HostIP()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:        cfg,
		ip:         ip,
		dir:        dir,
		parts:      parts,
		bridge:     bridgeName(cfg.Index),
		cgroupRoot: cgroupRootName(cfg.Index),
	}
	// First: a killed node's entry may name this very directory, and sweeping it empties
	// it. A live node's entry fails Start before anything of that node's is touched.
	if err := register(n); err != nil {
		return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	n.registered = true
	if err := n.start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("node %s: %w", cfg.Name, err), n.Stop())
	}
	return n, nil
}

// bridgeName and cgroupRootName name a node's bridge and cgroup root after its index, so
// that Sweep finds a dead node's from its registry entry alone.
func bridgeName(index int) string     { return fmt.Sprintf("sgbr%d", index) }
func cgroupRootName(index int) string { return fmt.Sprintf("/startupgate-node-%d", index) }

// Name is the Node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Dir is the node's state directory, its logs included.
func (n *Node) Dir() string { return n.dir }

// PodCIDR is the node's Pod subnet.
func (n *Node) PodCIDR() string { return fmt.Sprintf("10.244.%d.0/24", n.cfg.Index) }

func (n *Node) start(ctx context.Context) error {
	for _, d := range []string{"cni", "ipam", "kubelet", "runc", "images", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := makeCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	clientCA, err := servingcert.CA()
	if err != nil {
		return err
	}
	files := map[string]string{
		"kubelet/client-ca.crt":  string(clientCA),
		"containerd.toml":        containerdConfig(n.dir, n.parts),
		"cni/10-bridge.conflist": cniConfig(n.bridge, n.PodCIDR(), filepath.Join(n.dir, "ipam")),
		"kubelet/kubeletconfig.yaml": kubeletConfig(kubeletSettings{
			cgroupRoot: n.cgroupRoot, socket: socket(n.dir), podCIDR: n.PodCIDR(), address: n.ip, port: n.kubeletPort(),
			healthz: n.healthzAddress(), clientCA: filepath.Join(n.dir, "kubelet", "client-ca.crt"),
			podLogs: filepath.Join(n.dir, "pod-logs"),
		}),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if n.containerd, err = n.spawn("containerd", filepath.Join(n.parts, "containerd"), "--config", filepath.Join(n.dir, "containerd.toml")); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	images, err := writeImages(filepath.Join(n.dir, "images"), filepath.Join(n.parts, "busybox"))
	if err != nil {
		return err
	}
	for _, img := range images {
		if err := n.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	args := []string{
		"--config", filepath.Join(n.dir, "kubelet", "kubeletconfig.yaml"),
		"--kubeconfig", n.cfg.Kubeconfig,
		"--hostname-override", n.cfg.Name,
		"--node-ip", n.ip,
		"--root-dir", filepath.Join(n.dir, "kubelet"),
		"--cert-dir", filepath.Join(n.dir, "kubelet", "pki"),
		"--v", "2",
	}
	if len(n.cfg.Labels) > 0 {
		args = append(args, "--node-labels", joinLabels(n.cfg.Labels))
	}
	n.kubeletArgs = args
	return n.startKubelet()
}

// startKubelet starts the kubelet with the flags start gave it.
func (n *Node) startKubelet() error {
	var err error
	n.kubelet, err = n.spawn("kubelet", filepath.Join(n.parts, "kubelet"), n.kubeletArgs...)
	return err
}

// RestartKubelet stops the kubelet as a service manager restarting it would (SIGTERM) and
// starts it again with the same flags, its log appended to. The containers, containerd
// and the machine's boot stay: to the API, the node's kubelet went away and came back.
func (n *Node) RestartKubelet() error {
	if n.kubelet == nil {
		return fmt.Errorf("node %s: its kubelet is not running", n.cfg.Name)
	}
	stop(n.kubelet, 10*time.Second)
	return n.startKubelet()
}

// proc is a running part of the node.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	err  error         // its exit; read after done
}

// spawn starts a part with its output in the node's directory.
func (n *Node) spawn(name, path string, args ...string) (*proc, error) {
	p, log, err := spawn(n.dir, name, path, n.parts, args...)
	if log != nil {
		n.logs = append(n.logs, log)
	}
	return p, err
}

// spawn starts a part with its output appended to dir/NAME.log, which it returns for the
// caller to close, and the parts directory first in its PATH. It dies with this process (a
// parent-death signal), and keeps this process's environment, so that hack/leftovers finds
// it if it outlives the run.
func spawn(dir, name, path, parts string, args ...string) (*proc, *os.File, error) {
	log, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "PATH="+parts+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, log, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, log, nil
}

// Exited returns nil while the node's containerd and kubelet run, and otherwise says which
// exited and how, and where its log is.
func (n *Node) Exited() error {
	for _, p := range []*proc{n.containerd, n.kubelet} {
		if p == nil {
			continue
		}
		if err := p.exited(n.dir); err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
	}
	return nil
}

// exited returns nil while p runs, and otherwise how it exited and its log, in dir.
func (p *proc) exited(dir string) error {
	select {
	case <-p.done:
	default:
		return nil
	}
	log := filepath.Join(dir, p.name+".log")
	tail := logTail(log, tailLines)
	if p.err == nil {
		return fmt.Errorf("%s exited; its log is %s, which ends:\n%s", p.name, log, tail)
	}
	return fmt.Errorf("%s exited (%w); its log is %s, which ends:\n%s", p.name, p.err, log, tail)
}

// tailLines is how much of a part's log its exit error quotes: a kubelet or containerd that
// fails to start logs why last, and a test's output may be all that is left of a CI run.
const tailLines = 8

// logTail returns the last n lines of the log at path, each indented, or why it cannot.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "\t" + err.Error()
	}
	defer f.Close()
	const most = 16 << 10 // n long lines at most; the rest of a large log is not read
	var off int64
	if st, err := f.Stat(); err == nil && st.Size() > most {
		off = st.Size() - most
	}
	buf := make([]byte, most)
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "\t" + err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(buf[:k]), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first may be cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\t" + strings.Join(lines, "\n\t")
}

// ImportImage imports a docker archive (what make image writes) into the node's containerd,
// where its kubelet finds it under the archive's tag: nothing is ever pulled.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	if out, err := n.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("node %s: importing %s: %w: %s", n.cfg.Name, tarball, err, out)
	}
	return nil
}

// KubeletURL is the kubelet's API on this machine (read-only use: its stats summary), for
// KubeletClient.
func (n *Node) KubeletURL() string {
	return fmt.Sprintf("https://%s:%d", n.ip, n.kubeletPort())
}

// KubeletClient calls the kubelet's API as the apiserver does, with a client certificate
// of this process's CA, which the kubelet requires; it does not check the kubelet's own
// self-signed certificate.
func (n *Node) KubeletClient() (*http.Client, error) {
	cert, err := servingcert.Client("startupgate-test")
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // the kubelet's self-signed certificate, on this machine
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

// kubeletPort is the port the node's kubelet serves its API on, on the node's InternalIP,
// where the apiserver reaches it for `kubectl logs` and `exec` (it dials a node's
// InternalIP and the port the kubelet reports). Every node here shares that address, so
// each has a port of its own by its index, below the ephemeral range, where no outgoing
// connection takes it before the kubelet listens, and clear of the plane's and
// kube-proxy's ports (10248 to 10259).
func (n *Node) kubeletPort() int { return kubeletPortBase + n.cfg.Index }

// healthzAddress is the loopback address the node's kubelet serves its health check on,
// its own by the node's index (all of 127.0.0.0/8 is this machine's), so it keeps the
// usual port.
func (n *Node) healthzAddress() string { return fmt.Sprintf("127.244.%d.1", n.cfg.Index) }

// ctr runs containerd's client against the node's containerd, in the CRI's namespace.
func (n *Node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.parts, "ctr"), append([]string{"--address", socket(n.dir), "--namespace", "k8s.io"}, args...)...)
	return cmd.CombinedOutput()
}

// waitContainerd waits until containerd answers on its socket.
func (n *Node) waitContainerd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		out, err := n.ctr(ctx, "version")
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd did not answer within a minute (%s): %w: %s", filepath.Join(n.dir, "containerd.log"), err, out)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// HostIP is every real node's InternalIP: an IPv4 address of this machine's that is not
// loopback (the kubelet refuses a loopback node IP), nor a node's bridge. A plane that serves
// real Pods listens on it too (controlplane.Embedded.PodIP).
func HostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !strings.HasPrefix(ipn.IP.String(), "10.244.") {
			return ipn.IP.String(), nil
		}
	}
	return "", errors.New("this machine has no IPv4 address other than loopback for a node IP")
}

// joinLabels is the kubelet's --node-labels form, in a stable order.
func joinLabels(labels map[string]string) string {
	kv := make([]string, 0, len(labels))
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// Wait polls the node's Node until it exists and ok holds, for up to two minutes, and
// fails at once if the node's containerd or kubelet exits. It returns the Node last seen.
func (n *Node) Wait(ctx context.Context, cs kubernetes.Interface, ok func(*corev1.Node) bool) (*corev1.Node, error) {
	var got *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := n.Exited(); err != nil {
			return false, err
		}
		nd, err := cs.CoreV1().Nodes().Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		got = nd
		return ok(nd), nil
	})
	if err != nil {
		return got, fmt.Errorf("node %s: %w (last seen: %+v)", n.cfg.Name, err, got)
	}
	return got, nil
}

// KillContainer kills a running container with SIGKILL, as the kernel's OOM killer or a
// crash would end it; its kubelet sees it exit and restarts it as the Pod says. id is the
// container's ID in the Pod's status, with or without its containerd:// prefix.
func (n *Node) KillContainer(ctx context.Context, id string) error {
	id = strings.TrimPrefix(id, "containerd://")
	if out, err := n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		return fmt.Errorf("node %s: killing container %s: %w: %s", n.cfg.Name, id, err, out)
	}
	return nil
}

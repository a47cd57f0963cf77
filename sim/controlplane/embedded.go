package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubeVersion is the Kubernetes release of the embedded plane. It is pinned once, by the
// k8s.io/api requirement in go.mod: staging modules are released as v0.X.Y alongside
// Kubernetes v1.X.Y. The Makefile derives the same value for hack/controlplane.sh.
var KubeVersion = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "k8s.io/api" && strings.HasPrefix(m.Version, "v0.") {
				return "v1." + strings.TrimPrefix(m.Version, "v0.")
			}
		}
	}
	return "v1.36.3"
}()

// ErrNoBinaries is returned when the pinned control-plane binaries are not built yet.
var ErrNoBinaries = errors.New("control plane binaries not found: run make controlplane")

// Backend is a control plane the simulator can run against.
type Backend interface {
	// Start brings the plane up (or connects) and returns an admin config.
	Start(ctx context.Context) (*rest.Config, error)
	// Stop tears down what Start created. It is safe to call more than once.
	Stop() error
	// Name is "embedded", "kubeconfig" or "kind".
	Name() string
}

// BinaryDir finds the control-plane binaries: $KUBEBUILDER_ASSETS, else the per-user cache
// that `make controlplane` fills.
func BinaryDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("finding the binary cache: %w", err)
			}
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "startupgate", "controlplane", KubeVersion)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%w (looked in %s)", ErrNoBinaries, dir)
		}
	}
	return dir, nil
}

// Embedded is the default backend: envtest's etcd and kube-apiserver, plus a real
// kube-scheduler and kube-controller-manager as child processes.
type Embedded struct {
	// APIServerArgs are extra kube-apiserver flags (name -> value), for faults such as
	// short request timeouts.
	APIServerArgs map[string]string
	// LogDir receives the output of etcd, kube-apiserver, the scheduler and the
	// controller-manager, one file each; the plane's temp dir (removed by Stop) if empty.
	LogDir string
	// PodIP, if set, is an address of this machine's on which the plane also serves real
	// Pods (sim/node): the apiserver listens there and advertises it as the endpoint of the
	// kubernetes Service, whose ClusterIP its certificate names, so that a Pod reaches it
	// in-cluster through kube-proxy; Pods get ServiceAccount tokens; and the
	// controller-manager runs what in-cluster clients and Services need.
	PodIP string
	// NodeMonitorPeriod is how often the controller-manager's node lifecycle controller
	// checks every Node; DefaultNodeMonitorPeriod if zero. Each pass copies every Node, so
	// a plane of tens of thousands wants a longer one than the controller-manager's own
	// default, 5 s (the large benchmark's is a minute).
	NodeMonitorPeriod time.Duration
	// Env is extra environment (KEY=value) for every process of the plane: etcd, the
	// apiserver, the scheduler and the controller-manager, and nothing else. The large
	// benchmark sets their garbage collector's target (GOGC) and etcd's quota through it.
	Env []string
	// CgroupProcs, if set, is the cgroup.procs file of a CPU cgroup that every process of
	// the plane joins as it starts: etcd and the apiserver from their wrappers, before they
	// run, and the scheduler and the controller-manager once started. sim/node's Cluster
	// gives its plane a CPU share of its own, as a real cluster's control plane has
	// machines of its own.
	CgroupProcs string

	env        *envtest.Environment
	kubeconfig string
	dir        string
	bin        string
	mu         sync.Mutex
	children   []*exec.Cmd
	logs       []*os.File           // etcd's and kube-apiserver's, which envtest starts
	running    map[string]*exec.Cmd // the scheduler and the controller-manager, among children
	grace      time.Duration        // the controller-manager's node monitor grace period
	started    time.Duration
}

// Name is "embedded".
func (e *Embedded) Name() string { return "embedded" }

// StartDuration is how long the last Start took.
func (e *Embedded) StartDuration() time.Duration { return e.started }

// Start launches etcd and kube-apiserver, waits for them, then the scheduler and the
// controller-manager. Children get SIGKILL if this process dies (Pdeathsig), so even a
// crashed test leaves none behind.
func (e *Embedded) Start(ctx context.Context) (*rest.Config, error) {
	begin := time.Now()
	bin, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	if e.dir, err = os.MkdirTemp("", "startupgate-plane-"); err != nil {
		return nil, fmt.Errorf("creating plane dir: %w", err)
	}
	if e.LogDir == "" {
		e.LogDir = e.dir
	}
	// A kept log directory holds this plane's logs only; a restart within it appends.
	for _, name := range []string{"etcd", "kube-apiserver", "kube-apiserver-restarted", "kube-scheduler", "kube-controller-manager"} {
		if err := os.Remove(filepath.Join(e.LogDir, name+".log")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = e.Stop()
			return nil, fmt.Errorf("clearing the plane's log: %w", err)
		}
	}
	assets, err := e.wrappers(bin)
	if err != nil {
		return nil, err
	}
	e.env = &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: time.Minute}
	logs, err := e.openLogs("etcd", "kube-apiserver")
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	// The paths are set, not left to envtest: it prefers $KUBEBUILDER_ASSETS, which make
	// exports, to BinaryAssetsDirectory, and so would start the binaries without their
	// parent-death wrappers.
	e.env.ControlPlane.Etcd = &envtest.Etcd{Out: logs[0], Err: logs[0], Path: filepath.Join(assets, "etcd")}
	apiServer := e.env.ControlPlane.GetAPIServer()
	apiServer.Out, apiServer.Err = logs[1], logs[1]
	apiServer.Path = filepath.Join(assets, "kube-apiserver")
	api := apiServer.Configure()
	// Bursts of thousands of nodes and pods must not be throttled by the apiserver itself.
	api.Set("max-requests-inflight", "2000").Set("max-mutating-requests-inflight", "1000")
	// A run's cleanup deletes its nodes and Pods by collection; with the default single
	// worker, 5000 nodes took minutes, one etcd round trip after another.
	api.Set("delete-collection-workers", "8")
	if e.PodIP != "" {
		if err := e.servePods(apiServer); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	for k, v := range e.APIServerArgs {
		api.Set(k, v)
	}
	if _, err := e.env.Start(); err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	user, err := e.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("adding admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	e.kubeconfig = filepath.Join(e.dir, "admin.kubeconfig")
	if err := os.WriteFile(e.kubeconfig, kc, 0o600); err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := e.startChildren(bin); err != nil {
		_ = e.Stop()
		return nil, err
	}
	cfg := rest.CopyConfig(user.Config())
	if err := waitForNamespace(ctx, cfg, "kube-node-lease"); err != nil {
		_ = e.Stop()
		return nil, err
	}
	e.started = time.Since(begin)
	return cfg, nil
}

// Kubeconfig is the admin kubeconfig file of the running plane.
func (e *Embedded) Kubeconfig() string { return e.kubeconfig }

// APIServerLog is the kube-apiserver's log file, which a run reads for what the apiserver
// alone knows: a webhook call it let through unanswered.
func (e *Embedded) APIServerLog() string { return filepath.Join(e.LogDir, "kube-apiserver.log") }

// wrappers returns a directory of wrappers that start etcd and kube-apiserver with a
// parent-death signal (setpriv --pdeathsig), so that they die with this process even when
// it is killed outright — envtest itself does not arrange that, and a crashed test would
// otherwise leave them running — and with Env and in CgroupProcs' cgroup, which envtest
// has no way to arrange. Without setpriv, Env and CgroupProcs the real binaries are used.
func (e *Embedded) wrappers(bin string) (string, error) {
	join := ""
	if e.CgroupProcs != "" {
		join = "echo $$ > " + shellQuote(e.CgroupProcs) + " || exit 1\n"
	}
	prefix := "exec"
	if len(e.Env) > 0 {
		prefix += " env"
		for _, kv := range e.Env {
			prefix += " " + shellQuote(kv)
		}
	}
	if setpriv, err := exec.LookPath("setpriv"); err == nil {
		prefix += " " + shellQuote(setpriv) + " --pdeathsig KILL --"
	} else if len(e.Env) == 0 && join == "" {
		return bin, nil // no setpriv is no failure: the real binaries run unwrapped
	}
	dir := filepath.Join(e.dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := fmt.Sprintf("#!/bin/sh\n%s%s %s \"$@\"\n", join, prefix, shellQuote(filepath.Join(bin, name)))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// shellQuote quotes s as one word of a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e *Embedded) startChildren(bin string) error {
	schedCfg := filepath.Join(e.dir, "scheduler.yaml")
	err := os.WriteFile(schedCfg, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 2000
  burst: 4000
leaderElection:
  leaderElect: false
`, e.kubeconfig)), 0o600)
	if err != nil {
		return fmt.Errorf("writing scheduler config: %w", err)
	}
	e.bin = bin
	if err := e.startChild("kube-scheduler", e.schedulerArgs()); err != nil {
		return err
	}
	return e.SetNodeMonitorGracePeriod(DefaultNodeMonitorGracePeriod)
}

func (e *Embedded) schedulerArgs() []string {
	return []string{"--config=" + filepath.Join(e.dir, "scheduler.yaml"), "--secure-port=0"}
}

// DefaultNodeMonitorGracePeriod is how long the embedded controller-manager waits for a
// node's heartbeat: see the fake kubelet's lease renewal.
const DefaultNodeMonitorGracePeriod = 3 * time.Minute

// DefaultNodeMonitorPeriod is how often the embedded controller-manager checks its nodes:
// a node that stops reporting is seen within a second, so the scenarios that stop kubelets
// stay short.
const DefaultNodeMonitorPeriod = time.Second

// controllerManagerArgs are the controller-manager's flags. It runs the controllers a
// scenario needs: the DaemonSet, ReplicaSet, Deployment and StatefulSet controllers, node
// lifecycle, taint eviction (NoExecute taints) and pod GC (which force-deletes the Pods of
// an out-of-service node), and the namespace controller for clean-up.
func (e *Embedded) controllerManagerArgs(grace time.Duration) []string {
	controllers := "daemonset,nodelifecycle,replicaset,deployment,statefulset-controller,taint-eviction-controller,podgc,namespace"
	if e.PodIP != "" {
		controllers += "," + podControllers
	}
	return []string{
		"--kubeconfig=" + e.kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers=" + controllers,
		"--use-service-account-credentials=false",
		"--node-monitor-period=" + cmp.Or(e.NodeMonitorPeriod, DefaultNodeMonitorPeriod).String(), "--node-monitor-grace-period=" + grace.String(),
		"--kube-api-qps=2000", "--kube-api-burst=4000",
		"--concurrent-daemonset-syncs=8", "--concurrent-replicaset-syncs=8",
	}
}

// startChild starts one of the plane's binaries as a child that dies with this process.
func (e *Embedded) startChild(name string, args []string) error {
	cmd, err := e.startProcess(name, filepath.Join(e.bin, name), args)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.running == nil {
		e.running = map[string]*exec.Cmd{}
	}
	e.running[name] = cmd
	e.mu.Unlock()
	return nil
}

// restartChild kills the named child, if it runs, and starts it again with args.
func (e *Embedded) restartChild(name string, args []string) error {
	e.mu.Lock()
	old := e.running[name]
	e.mu.Unlock()
	if old != nil && old.Process != nil {
		_ = killAndReap(-old.Process.Pid, old.Process.Pid) // gone already is as good
	}
	return e.startChild(name, args)
}

// openLogs opens LogDir/<name>.log for appending for each of the processes envtest starts
// (it does not write their output anywhere by default); Stop closes them.
func (e *Embedded) openLogs(names ...string) ([]*os.File, error) {
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(e.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("creating %s log: %w", name, err)
		}
		e.logs = append(e.logs, f)
	}
	return e.logs, nil
}

// startProcess starts path with args, its output appended to LogDir/logName.log, as a
// child that gets SIGKILL when this process dies; Stop kills it.
func (e *Embedded) startProcess(logName, path string, args []string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(filepath.Join(e.LogDir, logName+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", logName, err)
	}
	cmd := exec.Command(path, args...)
	if len(e.Env) > 0 {
		cmd.Env = append(os.Environ(), e.Env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(path), err)
	}
	e.mu.Lock()
	e.children = append(e.children, cmd)
	e.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close() }()
	// Every thread of the process moves with it, the ones it has started already too. On
	// an error it is left among the children, for Stop.
	if e.CgroupProcs != "" {
		if err := os.WriteFile(e.CgroupProcs, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return nil, fmt.Errorf("moving %s into cgroup %s: %w", filepath.Base(path), e.CgroupProcs, err)
		}
	}
	return cmd, nil
}

// killAndReap sends SIGKILL to target (a pid, or minus a process group's id) and returns
// once pid has been reaped by whoever waits for it.
func killAndReap(target, pid int) error {
	if err := syscall.Kill(target, syscall.SIGKILL); err != nil {
		return err
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// SetNodeMonitorGracePeriod restarts the controller-manager with this grace period (a
// scenario that stops a kubelet needs a short one). The caller must have the plane to
// itself: every other scenario would feel the restart.
func (e *Embedded) SetNodeMonitorGracePeriod(grace time.Duration) error {
	e.mu.Lock()
	e.grace = grace
	e.mu.Unlock()
	return e.restartChild("kube-controller-manager", e.controllerManagerArgs(grace))
}

// RestartControllers restarts the scheduler and the controller-manager, with the flags they
// run with. After an apiserver restart their informers back off before every new watch,
// and client-go forgets that backoff only after two minutes without a failure: it reaches
// [30 s, 60 s) after a few restarts. A plane whose apiserver is restarted run after run
// (make soak repeats apiserver-restart) would carry that into the next run, whose
// DaemonSet Pods and workloads would then wait up to a minute for the controller-manager
// and the scheduler to watch again, and time out; a later run deserves the plane a
// cluster has after one crash, not after dozens. The caller must have the plane to itself.
func (e *Embedded) RestartControllers() error {
	if err := e.restartChild("kube-scheduler", e.schedulerArgs()); err != nil {
		return err
	}
	e.mu.Lock()
	grace := e.grace
	e.mu.Unlock()
	return e.restartChild("kube-controller-manager", e.controllerManagerArgs(grace))
}

// Stop kills the children and stops envtest.
func (e *Embedded) Stop() error {
	for _, c := range e.children {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
	e.children = nil
	var err error
	if e.env != nil {
		err = e.env.Stop()
		e.env = nil
	}
	for _, f := range e.logs {
		_ = f.Close()
	}
	e.logs = nil
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
	return err
}

// waitForNamespace waits until the apiserver has created its system namespaces, the sign
// that it is ready to serve (Lease heartbeats need kube-node-lease).
func waitForNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil, nil
	})
}

// RestartAPIServer kills kube-apiserver (SIGKILL, like a crash), waits down, and starts it
// again with exactly the same command line — same port, certificates and etcd — so every
// client keeps its credentials but loses its connections and watches. It returns once the
// new apiserver is ready.
func (e *Embedded) RestartAPIServer(ctx context.Context, down time.Duration) error {
	pid, argv, err := childProcess("kube-apiserver")
	if err != nil {
		return err
	}
	if err := killAndReap(pid, pid); err != nil { // envtest's Wait reaps it
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	time.Sleep(down)
	if _, err := e.startProcess("kube-apiserver-restarted", argv[0], argv[1:]); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	cs, err := kubernetes.NewForConfig(e.env.Config)
	if err != nil {
		return err
	}
	return pollReady(ctx, cs)
}

func pollReady(ctx context.Context, cs kubernetes.Interface) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// childProcess finds this process's child with the given command name, with its argv.
func childProcess(name string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	me := strconv.Itoa(os.Getpid())
	comm := name
	if len(comm) > 15 { // the kernel keeps 15 bytes of a command's name: "kube-controller"
		comm = comm[:15]
	}
	for _, ent := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != comm {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			return 0, nil, err
		}
		pid, _ := strconv.Atoi(ent.Name())
		return pid, strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), nil
	}
	return 0, nil, fmt.Errorf("no %s child process found", name)
}

// WriteKubeconfig writes rc as a kubeconfig file, for a child process (the gate as a
// process, the floor) that must reach the same plane with the same identity.
func WriteKubeconfig(rc *rest.Config, path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sim"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData,
		CertificateAuthority: rc.CAFile, InsecureSkipTLSVerify: rc.Insecure, TLSServerName: rc.ServerName}
	cfg.AuthInfos["sim"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData,
		ClientCertificate: rc.CertFile, ClientKey: rc.KeyFile, Token: rc.BearerToken, TokenFile: rc.BearerTokenFile,
		Username: rc.Username, Password: rc.Password,
		Impersonate: rc.Impersonate.UserName, ImpersonateGroups: rc.Impersonate.Groups}
	cfg.Contexts["sim"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "sim"}
	cfg.CurrentContext = "sim"
	return clientcmd.WriteToFile(*cfg, path)
}

// PlaneProcesses are the pids of the embedded plane's processes (children of this one), by
// name, for a benchmark that reads what each costs the machine.
func PlaneProcesses() map[string]int {
	out := map[string]int{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if pid, _, err := childProcess(name); err == nil {
			out[name] = pid
		}
	}
	return out
}

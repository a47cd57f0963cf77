package autoscaler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/startupgate/startupgate/internal/freeport"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRDs are the files, in the build's directory, of the CRDs Karpenter's KWOK provider reads:
// hack/karpenter.sh copies them from the module it builds, so they match the binary.
var CRDs = []string{
	"karpenter.sh_nodepools.yaml",
	"karpenter.sh_nodeclaims.yaml",
	"karpenter.kwok.sh_kwoknodeclasses.yaml",
}

// binary is the KWOK provider's file name in the build's directory.
const binary = "karpenter"

// Build makes sure Karpenter is built, running hack/karpenter.sh (which pins its version and
// leaves a complete build alone), and returns the directory of the binary and its CRDs.
func Build(ctx context.Context) (string, error) {
	root, err := repoRoot(ctx)
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "karpenter.sh")
	var stderr bytes.Buffer
	build := exec.CommandContext(ctx, script)
	build.Stderr = &stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building Karpenter (%s): %w\n%s", script, err, stderr.String())
	}
	out, err := exec.CommandContext(ctx, script, "--print-dir").Output()
	if err != nil {
		return "", fmt.Errorf("finding Karpenter's build directory: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot is the startupgate checkout that holds hack/karpenter.sh: this package's source
// directory's, else (a binary built with -trimpath has no such path) the go command's
// main module's.
func repoRoot(ctx context.Context) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(root, "hack", "karpenter.sh")); err == nil {
			return filepath.Clean(root), nil
		}
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the startupgate checkout: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if _, err := os.Stat(filepath.Join(root, "hack", "karpenter.sh")); err != nil {
		return "", fmt.Errorf("finding the startupgate checkout: no hack/karpenter.sh in %s", root)
	}
	return root, nil
}

// CRDOptions are envtest's options for the CRDs of the build in dir (Build's).
func CRDOptions(dir string) envtest.CRDInstallOptions {
	var paths []string
	for _, c := range CRDs {
		paths = append(paths, filepath.Join(dir, c))
	}
	return envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: time.Minute}
}

// InstallCRDs installs the CRDs of the build in dir (Build's) and waits until the apiserver
// serves them.
func InstallCRDs(cfg *rest.Config, dir string) error {
	if _, err := envtest.InstallCRDs(cfg, CRDOptions(dir)); err != nil {
		return fmt.Errorf("installing Karpenter's CRDs: %w", err)
	}
	return nil
}

// Options say how Karpenter runs.
type Options struct {
	// Kubeconfig is the plane's admin kubeconfig file; Karpenter runs out of cluster.
	Kubeconfig string
	// LogDir receives karpenter.log and the instance-types file; required.
	LogDir string
	// InstanceTypes are the only instance types Karpenter may launch (at least one).
	InstanceTypes []InstanceType
	// Dir holds the binary and its CRDs; empty: Build's.
	Dir string
	// Env is extra environment for Karpenter (KEY=value), after the settings Start makes,
	// e.g. FEATURE_GATES or BATCH_IDLE_DURATION.
	Env []string
}

// Karpenter is a running KWOK provider.
type Karpenter struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	stopped atomic.Bool   // Stop was called: an exit from now on is ours
	log     string
	health  int
	metrics int
}

// Start installs the CRDs (and waits until the apiserver serves them), writes the instance
// types, and starts Karpenter; it returns once Karpenter reports ready. The process gets
// SIGKILL if this one dies, so even a crashed test leaves none behind; Stop ends it.
func Start(ctx context.Context, o Options) (*Karpenter, error) {
	if o.Kubeconfig == "" || o.LogDir == "" || len(o.InstanceTypes) == 0 {
		return nil, errors.New("starting Karpenter: a kubeconfig, a log directory and at least one instance type are needed")
	}
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = Build(ctx); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", o.Kubeconfig, err)
	}
	if err := InstallCRDs(cfg, dir); err != nil {
		return nil, err
	}
	types, err := json.MarshalIndent(instanceTypesFile(o.InstanceTypes), "", "  ")
	if err != nil {
		return nil, err
	}
	typesFile := filepath.Join(o.LogDir, "karpenter-instance-types.json")
	if err := os.WriteFile(typesFile, types, 0o644); err != nil {
		return nil, fmt.Errorf("writing Karpenter's instance types: %w", err)
	}
	metrics, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	health, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	k := &Karpenter{log: filepath.Join(o.LogDir, "karpenter.log"), health: health, metrics: metrics, done: make(chan struct{})}
	logf, err := os.OpenFile(k.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating Karpenter's log: %w", err)
	}
	// No arguments: Karpenter parses all of os.Args as its own flags, and every setting it
	// needs out of cluster has an environment variable.
	k.cmd = exec.Command(filepath.Join(dir, binary))
	k.cmd.Env = append(os.Environ(),
		"KUBECONFIG="+o.Kubeconfig,
		"DISABLE_LEADER_ELECTION=true",
		"METRICS_PORT="+strconv.Itoa(metrics),
		"HEALTH_PROBE_PORT="+strconv.Itoa(health),
		"INSTANCE_TYPES_FILE_PATH="+typesFile,
	)
	k.cmd.Env = append(k.cmd.Env, o.Env...)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting Karpenter: %w", err)
	}
	go func() {
		_ = k.cmd.Wait()
		logf.Close()
		close(k.done)
	}()
	if err := k.waitReady(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// waitReady polls Karpenter's readiness probe, which passes once its caches have synced
// and the apiserver serves NodePools and NodeClaims, and its metrics endpoint: Karpenter
// starts both servers at once and exits if either cannot listen, so one alone says little.
func (k *Karpenter) waitReady(ctx context.Context) error {
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", k.health)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", k.metrics)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if k.exited() {
			return false, errors.New("the Karpenter process exited")
		}
		return answers(ctx, ready) && answers(ctx, metrics), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Karpenter to be ready: %w; the last lines of %s:\n%s", err, k.log, k.LogTail(20))
	}
	return nil
}

// answers reports whether a GET of url returns 200 OK; not listening yet is false.
func answers(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// exited reports whether Karpenter's process has exited, on its own or by Stop.
func (k *Karpenter) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// Exited returns an error, with the end of Karpenter's log, if the process has exited
// without Stop; a run that goes on without its autoscaler would fail later and less clearly.
func (k *Karpenter) Exited() error {
	if !k.exited() || k.stopped.Load() {
		return nil
	}
	return fmt.Errorf("the Karpenter process exited (%v); the last lines of %s:\n%s", k.cmd.ProcessState, k.log, k.LogTail(20))
}

// Pid is the Karpenter process's id.
func (k *Karpenter) Pid() int { return k.cmd.Process.Pid }

// Log is the path of Karpenter's log.
func (k *Karpenter) Log() string { return k.log }

// LogTail returns the last n lines of Karpenter's log, for an error message.
func (k *Karpenter) LogTail(n int) string {
	b, err := os.ReadFile(k.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Pause stops Karpenter's process (SIGSTOP) where it is, as a node would see a Karpenter
// that hangs or is being rescheduled; Resume continues it.
func (k *Karpenter) Pause() error { return syscall.Kill(-k.cmd.Process.Pid, syscall.SIGSTOP) }

// Resume continues a paused Karpenter.
func (k *Karpenter) Resume() error { return syscall.Kill(-k.cmd.Process.Pid, syscall.SIGCONT) }

// Stop kills Karpenter's process group and returns once the process has been reaped. It is
// safe to call more than once.
func (k *Karpenter) Stop() {
	if k == nil || k.cmd == nil || k.cmd.Process == nil {
		return
	}
	k.stopped.Store(true)
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL) // gone already is as good
	<-k.done
}

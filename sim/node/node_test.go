package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/sim/controlplane"
)

// TestRealNode: a real kubelet registers its Node with the embedded plane and runs a Pod
// from the node's own image, readiness probe and all; Stop then leaves nothing behind. A
// second node is killed instead of stopped, as a killed run's would be, and Sweep removes
// what it left. This package's tests use node indexes 1 to 9.
func TestRealNode(t *testing.T) {
	if why := Unsupported(); why != "" {
		t.Skip(why)
	}
	if _, err := PartsDir(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plane := &controlplane.Embedded{}
	rc, err := plane.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	cs := kubernetes.NewForConfigOrDie(rc)

	t.Run("stopped", func(t *testing.T) {
		n := startReady(t, cs, plane.Kubeconfig(), 1, t.TempDir())
		assertNoImageGC(t, n)
		assertAnonymousRefused(t, n)
		runReadyPod(t, cs, n.Name())
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
		assertGone(t, n)
	})
	t.Run("killed then swept", func(t *testing.T) {
		n := startReady(t, cs, plane.Kubeconfig(), 2, t.TempDir())
		runReadyPod(t, cs, n.Name())
		kill(n)
		if processesWith(socket(n.dir)) == nil {
			t.Fatal("no shim outlived the killed containerd: the sweep has nothing to prove")
		}
		if err := Sweep(); err != nil {
			t.Fatal(err)
		}
		assertGone(t, n)
	})
	t.Run("killed, restarted", func(t *testing.T) {
		dir := t.TempDir()
		killed := startReady(t, cs, plane.Kubeconfig(), 3, dir)
		kill(killed)
		// Its Node goes too, so that Ready below is the new kubelet's.
		if err := cs.CoreV1().Nodes().Delete(context.Background(), killed.Name(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		again := startReady(t, cs, plane.Kubeconfig(), 3, dir) // its Start sweeps what the killed one left
		if err := again.Stop(); err != nil {
			t.Fatal(err)
		}
		assertGone(t, again)
	})
	t.Run("an index in use", func(t *testing.T) {
		live := startReady(t, cs, plane.Kubeconfig(), 4, t.TempDir())
		other, err := Start(context.Background(), Config{Name: "real-4b", Index: 4, Dir: t.TempDir(), Kubeconfig: plane.Kubeconfig()})
		if err == nil {
			_ = other.Stop()
			t.Fatal("a second node started on index 4, which a live node holds")
		}
		if err := live.Exited(); err != nil {
			t.Fatalf("the live node on that index, after the second's failed Start: %v", err)
		}
		if entry, err := os.ReadFile(filepath.Join(registry, "4")); err != nil || string(entry) != live.dir {
			t.Errorf("the live node's registry record, after the second's failed Start: %q, %v", entry, err)
		}
	})
	t.Run("kube-proxy stopped, then killed and swept", func(t *testing.T) {
		// Most of it is the wait for the machine's kube-proxy, which deploy/helm's
		// TestChartOnRealNodes holds for its whole run: 11 minutes in a make test on 2 cores.
		// Each kube-proxy has its own minute to route the Service (WaitService).
		ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		p := startProxy(ctx, t, plane.Kubeconfig())
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		assertProxyGone(t)
		p = startProxy(ctx, t, plane.Kubeconfig())
		_ = syscall.Kill(-p.proc.cmd.Process.Pid, syscall.SIGKILL)
		<-p.proc.done
		_ = p.lock.Close() // as the death of its owner would
		p.proc, p.lock = nil, nil
		if err := Sweep(); err != nil {
			t.Fatal(err)
		}
		assertProxyGone(t)
	})
}

// startProxy starts kube-proxy and waits for its rules for the apiserver's Service.
func startProxy(ctx context.Context, t *testing.T, kubeconfig string) *Proxy {
	t.Helper()
	p, err := StartProxy(ctx, t.TempDir(), kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	if err := p.WaitService(ctx, "default/kubernetes"); err != nil {
		t.Fatalf("%v\nits log ends:\n%s", err, tail(filepath.Join(p.dir, "kube-proxy.log"), 20))
	}
	return p
}

// assertProxyGone: kube-proxy's rules and its record are gone.
func assertProxyGone(t *testing.T) {
	t.Helper()
	if chainExists("nat", "KUBE-SERVICES") {
		t.Error("kube-proxy's KUBE-SERVICES chain is left in the nat table")
	}
	if _, err := os.Stat(proxyEntry); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kube-proxy's registry record is left: %v", err)
	}
}

// assertAnonymousRefused: the kubelet's API, on the machine's address, refuses a caller
// without a certificate of this process's CA.
func assertAnonymousRefused(t *testing.T, n *Node) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // the kubelet's self-signed certificate, on this machine
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, n.KubeletURL()+"/configz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an anonymous call to the kubelet's API: %s, want 401 Unauthorized", resp.Status)
	}
}

// assertNoImageGC: the running kubelet took the configuration that turns its image garbage
// collection off, as its /configz reports; an imported image it deleted could not come back.
func assertNoImageGC(t *testing.T, n *Node) {
	t.Helper()
	kc, err := n.KubeletClient()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, n.KubeletURL()+"/configz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := kc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var configz struct {
		Config struct {
			High *int `json:"imageGCHighThresholdPercent"`
		} `json:"kubeletconfig"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&configz); err != nil {
		t.Fatalf("the kubelet's /configz: %v", err)
	}
	switch got := configz.Config.High; {
	case got == nil:
		t.Error("the kubelet's /configz has no imageGCHighThresholdPercent")
	case *got != 100:
		t.Errorf("the kubelet's imageGCHighThresholdPercent is %d, want 100 (no image garbage collection)", *got)
	}
}

// kill kills the node's kubelet and containerd, as a killed run's death would.
func kill(n *Node) {
	for _, p := range []*proc{n.kubelet, n.containerd} {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	n.kubelet, n.containerd = nil, nil
}

// startReady starts a real node in dir and waits for its Node to be Ready.
func startReady(t *testing.T, cs kubernetes.Interface, kubeconfig string, index int, dir string) *Node {
	t.Helper()
	n, err := Start(context.Background(), Config{
		Name: "real-" + strconv.Itoa(index), Index: index, Dir: dir, Kubeconfig: kubeconfig,
		Labels: map[string]string{"startupgate.test/real-node": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	if _, err = n.Wait(context.Background(), cs, Ready); err != nil {
		t.Fatalf("node %s not Ready: %v\nkubelet's log ends:\n%s", n.Name(), err, tail(filepath.Join(n.Dir(), "kubelet.log"), 20))
	}
	return n
}

// runReadyPod runs a Pod on the node whose readiness probe passes only once its container
// has run, and waits for it to be Ready.
func runReadyPod(t *testing.T, cs kubernetes.Interface, node string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "init", Image: ToolsImage, ImagePullPolicy: corev1.PullNever,
				Command:        []string{"/bin/sh", "-c", "touch /tmp/ready; exec sleep 3600"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s not Ready: %v; status %+v", pod.Name, err, last.Status)
	}
	if last.Status.PodIP == "" {
		t.Errorf("pod %s is Ready without an IP", pod.Name)
	}
}

// assertGone: nothing of the node is left on the machine.
func assertGone(t *testing.T, n *Node) {
	t.Helper()
	if pids := processesWith(socket(n.dir)); len(pids) > 0 {
		t.Errorf("shims %v still run", pids)
	}
	if m, err := mountsUnder(n.dir); err != nil || len(m) > 0 {
		t.Errorf("mounts left under %s: %v %v", n.dir, m, err)
	}
	hs, err := hierarchies()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, n.cgroupRoot)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left in %s", n.cgroupRoot, h)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + n.bridge); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bridge %s left", n.bridge)
	}
	if _, err := os.Stat(filepath.Join(registry, strconv.Itoa(n.cfg.Index))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registry entry for index %d left", n.cfg.Index)
	}
	// The kubelets' chains go with the last node on the machine; another package's tests
	// may run one meanwhile, and then their chains rightly stay.
	if idle() && chainExists("filter", "KUBE-FIREWALL") && idle() {
		t.Error("the kubelets' KUBE-FIREWALL chain is left, with no real node on this machine")
	}
}

// tail is the last lines of a log, for a failure message: the node's directory goes with
// the test's.
func tail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

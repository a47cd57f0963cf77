package autoscaler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/internal/simtest"
	"github.com/startupgate/startupgate/sim/autoscaler"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/node"
	"github.com/startupgate/startupgate/sim/scenario"
)

func TestMain(m *testing.M) { simtest.Main(m, nil) }

// TestKarpenterScaleUp runs Karpenter's KWOK provider against the embedded plane with the
// gate in-process and the fake kubelet adopting Karpenter's nodes. Ten pending Pods of one
// CPU fit one node of the only instance type (11 CPU, of which Karpenter reserves 100m), so
// exactly one NodeClaim is needed. Its Node must come from Karpenter's own CREATE, carry
// the gate's taint from its first version, be made Ready by the fake kubelet, be released
// by the gate once its init Pod is ready, and run the ten Pods.
func TestKarpenterScaleUp(t *testing.T) {
	// Missing binaries are a failure, not a skip, as for the sim package's plane: make test
	// builds the plane first, and make test-unit leaves this test out by name.
	if _, err := controlplane.BinaryDir(); err != nil {
		t.Fatalf("needs the embedded plane's binaries (make controlplane): %v", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("building Karpenter needs the go command: %v", err)
	}
	const (
		name = "karpenter-scale-up"
		ns   = name
		pods = 10
		// The init Pod turns ready this long after it is bound: long enough for Karpenter,
		// whose batching waits up to 10s, to launch again if it counted the gate's taint
		// against the node.
		initAfter = 15 * time.Second
	)
	logDir := keptOnFailure(t)
	// A first build takes minutes: only the test's own deadline bounds it.
	dir, err := autoscaler.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	plane := &controlplane.Embedded{LogDir: logDir}
	t.Cleanup(func() { _ = plane.Stop() })
	rc, err := plane.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := config.DefaultConfig()
	cfg.NodeSelector = scenario.Label + "=" + name
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: name, Init: []scenario.InitDaemonSet{{
		Name: "init", Labels: map[string]string{"startup.k8s.io/component": "init"}, Tolerate: ptr.To(true),
		Ready: scenario.PodTimeline{Mode: scenario.ModeReady, After: initAfter},
	}}}
	gate := gateundertest.New(rc, cs, gateundertest.InProcess, cfg, sc, ns, gateundertest.Options{Run: name})
	t.Cleanup(func() { _ = gate.Stop(context.Background()) })
	if err := gate.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// Watched from before the first launch: every Node's first version.
	nodes := watchNodes(ctx, t, cs)

	var kubeletErrs errorList
	kctx, kcancel := context.WithCancel(ctx)
	t.Cleanup(kcancel)
	kl := &kubelet.Kubelet{Client: cs, Namespace: ns, Scenario: name, Seed: 1, Init: sc.Init,
		Version: controlplane.KubeVersion, Errors: kubeletErrs.add,
		Adopt: labels.SelectorFromSet(labels.Set{kubelet.KWOKNodeLabel: "fake"})}
	if err := kl.Start(kctx); err != nil {
		t.Fatal(err)
	}
	for _, ds := range sc.DaemonSetObjects(ns, []corev1.Taint{cfg.Taint}) {
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	k, err := autoscaler.Start(ctx, autoscaler.Options{Kubeconfig: plane.Kubeconfig(), LogDir: logDir, Dir: dir,
		InstanceTypes: []autoscaler.InstanceType{{Name: "c-11x-amd64-linux", CPU: resource.MustParse("11"), Memory: resource.MustParse("44Gi")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pid := k.Pid()
		k.Stop()
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("Karpenter (pid %d) still there after Stop: %v", pid, err)
		}
	})
	// Once Start has installed the CRDs, and before the NodePool: every NodeClaim.
	claims, err := autoscaler.WatchClaims(ctx, dyn, name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := autoscaler.NodePool{Name: name, Labels: map[string]string{scenario.Label: name},
		StartupTaints: []corev1.Taint{cfg.Taint}}.Object()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(autoscaler.KWOKNodeClasses).Create(ctx, autoscaler.NodeClass(autoscaler.DefaultNodeClass, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(autoscaler.NodePools).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i), Namespace: ns},
			Spec: sc.PodSpec(nil, nil, "1", "")}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var running []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Exited(); err != nil {
			return false, err
		}
		running = runningWorkload(ctx, cs, ns, running)
		return len(running) == pods, nil
	})
	if err != nil {
		t.Fatalf("%d of %d Pods Running after %s: %v; Karpenter's log ends:\n%s", len(running), pods, time.Since(start).Round(time.Second), err, k.LogTail(20))
	}
	t.Logf("%d Pods Running %s after they were created", pods, time.Since(start).Round(time.Second))
	// Karpenter batches pending Pods for up to 10s: a redundant launch after the release
	// would show by then.
	time.Sleep(12 * time.Second)

	const wantClaims = 1 // ceil(10 Pods / floor((11 - 0.1) CPU / 1 CPU per Pod))
	if got := claims.All(); len(got) != wantClaims {
		t.Errorf("NodeClaims created: %v, want %d", got, wantClaims)
	}
	first := nodes.first()
	if len(first) != wantClaims {
		t.Fatalf("Karpenter's Nodes: %d, want %d", len(first), wantClaims)
	}
	for _, n := range first {
		checkNode(ctx, t, cs, &cfg, n, running)
		t.Logf("node %s: taints by version:\n%s", n.Name, nodes.history(n.Name))
	}
	for _, err := range kubeletErrs.all() {
		t.Errorf("fake kubelet: %v", err)
	}
}

// keptOnFailure is a directory for the plane's and Karpenter's logs, removed after the test
// unless it failed.
func keptOnFailure(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "startupgate-karpenter-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("plane and Karpenter logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// runningWorkload is the workload Pods (not the init DaemonSet's) that run, reusing buf; a
// failed List (a busy plane) counts none, and the caller polls again.
func runningWorkload(ctx context.Context, cs kubernetes.Interface, ns string, buf []corev1.Pod) []corev1.Pod {
	buf = buf[:0]
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "!startup.k8s.io/component"})
	if err == nil {
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				buf = append(buf, p)
			}
		}
	}
	return buf
}

// checkNode checks one of Karpenter's Nodes: its first version (n) came from KWOK's CREATE
// with the gate's taint; now it is Ready, with the resources it was created with, released
// by the gate, and the running Pods are on it.
func checkNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, cfg *config.Config, n *corev1.Node, running []corev1.Pod) {
	t.Helper()
	name := n.Name
	if n.Annotations[kubelet.KWOKNodeLabel] != "fake" {
		t.Errorf("node %s: first version lacks the KWOK annotation: %v", name, n.Annotations)
	}
	if !hasTaint(n, cfg.Taint) {
		t.Errorf("node %s: first version lacks the gate's taint: %v", name, n.Spec.Taints)
	}
	// KWOK gives a Node the instance type's allocatable (and the NodeClaim's requests as
	// its capacity).
	if got := n.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("10900m")) != 0 {
		t.Errorf("node %s: created with %s allocatable CPU, want the instance type's 11 less 100m", name, got.String())
	}
	cur, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !node.Ready(cur) {
		t.Errorf("node %s is not Ready: %v", name, cur.Status.Conditions)
	}
	if diff := cmp.Diff(n.Status.Allocatable, cur.Status.Allocatable); diff != "" {
		t.Errorf("node %s: the fake kubelet changed the allocatable it was created with (-created +now):\n%s", name, diff)
	}
	if diff := cmp.Diff(n.Status.Capacity, cur.Status.Capacity); diff != "" {
		t.Errorf("node %s: the fake kubelet changed the capacity it was created with (-created +now):\n%s", name, diff)
	}
	if hasTaint(cur, cfg.Taint) || cur.Annotations[cfg.CompletedAnnotation] == "" {
		t.Errorf("node %s not released by the gate: taints %v, annotations %v", name, cur.Spec.Taints, cur.Annotations)
	}
	for _, p := range running {
		if p.Spec.NodeName != name {
			t.Errorf("Pod %s runs on %s, not on Karpenter's node %s", p.Name, p.Spec.NodeName, name)
		}
	}
}

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for _, have := range n.Spec.Taints {
		if have.MatchTaint(&t) {
			return true
		}
	}
	return false
}

// errorList collects the errors of asynchronous work, to report once the test ends.
type errorList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorList) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorList) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

package helm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/servingcert"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/node"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The chart on real nodes: the image make image builds, imported into a real node's
// containerd, installed with the Helm SDK as `helm install` does, onto a node labelled only
// as an EKS managed node group named system is (eks.amazonaws.com/nodegroup=system), with
// the chart's EKS platform file (platforms/eks.yaml: its exclude names that group, and the
// gate's Pods must run there), and then everything that path
// must deliver: the webhook served from the Pods through the
// chart's Service and certificate, probes, leader election across two replicas, metrics
// scraped from a Pod's IP, a real node gated and released by it, a burst of fake nodes with
// no Pod early, and the Pods' containers killed under a burst. The plane serves real Pods
// (controlplane.Embedded.PodIP) and kube-proxy makes ClusterIPs work; the apiserver reaches
// the webhook through its Service's ClusterIP, which kube-proxy forwards to a Pod on the
// node's bridge (a route this machine has, as every node's bridge is its own).

const (
	systemLabel = "eks.amazonaws.com/nodegroup"
	// gateImage is what the chart is told to run: make image's tarball, tagged so.
	gateImageRepo = "startupgate.local/startupgate"
	gateImageTag  = "test"
	// This package's real nodes use indexes 20 to 29 (sim's 10 to 19, sim/node's below).
	systemIndex = 20
	workerIndex = 21
)

// TestChartOnRealNodes is one cluster, with each check a subtest in order: each needs what
// the one before it built.
func TestChartOnRealNodes(t *testing.T) {
	if why := node.Unsupported(); why != "" {
		t.Skip(why)
	}
	c := newCluster(t)
	ctx := context.Background()
	inProcess := c.inProcessCreates(t)

	began := time.Now()
	if err := c.install(ctx, chartDir, releaseName, namespace, c.values()); err != nil {
		t.Fatal(err)
	}
	served, err := c.serving(ctx, namespace, releaseName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm install to the webhook serving through its Service: %s", served.Sub(began).Round(time.Millisecond))

	t.Run("leader election and metrics", func(t *testing.T) { c.checkReplicas(t) })
	t.Run("Node CREATE latency", func(t *testing.T) {
		installed := c.creates(t, "installed")
		t.Logf("Node CREATE through the webhook, %d sequential dry runs: the chart's Pods p50 %s, p99 %s; the in-process gate on this plane p50 %s, p99 %s",
			createSamples, installed.p50, installed.p99, inProcess.p50, inProcess.p99)
	})
	t.Run("a real node is gated and released", func(t *testing.T) { c.realNodeJoins(t) })
	t.Run("a node its init DaemonSet cannot land on", func(t *testing.T) { c.blockedNode(t) })
	t.Run("a burst of fake nodes, the webhook CA rotated meanwhile", func(t *testing.T) { c.burstRotating(t) })
	t.Run("certificates.mode switched to selfSigned and back", func(t *testing.T) { c.switchModes(t) })
	t.Run("gate containers killed under a burst", func(t *testing.T) {
		c.burst(t, "chart-burst-kill", func(ctx context.Context, _ sim.Live) { c.killGate(ctx, t) })
	})
	t.Run("memory after the bursts", func(t *testing.T) {
		var names []string
		for _, p := range c.gatePods(t) {
			names = append(names, p.Name)
		}
		c.logMemory(t, names)
	})
	t.Run("an upgrade to a config the gate refuses", func(t *testing.T) { c.brokenUpgrade(t) })
	t.Run("the self-signed kustomize overlay instead", func(t *testing.T) { c.kustomizeInstall(t) })
	t.Run("helm template with the gate's own certificates instead", func(t *testing.T) { c.templateInstall(t) })
	// Last: the broken release's webhook refuses every Node CREATE from here on.
	t.Run("a broken chart is caught", func(t *testing.T) { c.brokenChart(t) })
}

// createSamples is how many Node CREATEs each latency figure is taken from.
const createSamples = 200

// latency is a sample's median and 99th percentile.
type latency struct{ p50, p99 time.Duration }

// creates times createSamples dry-run Node CREATEs, one after another, for nodes the
// scenario name's gate admits, each of which must come back tainted: the cost admission
// adds to a kubelet's registration.
func (c *cluster) creates(t *testing.T, name string) latency {
	t.Helper()
	r := defaultRule()
	var took []time.Duration
	for i := range createSamples {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{scenario.Label: name}}}
		began := time.Now()
		out, err := c.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		took = append(took, time.Since(began))
		if err != nil || !r.HasTaint(out) {
			t.Fatalf("Node CREATE %s: %v; taints %v", n.Name, err, out.Spec.Taints)
		}
	}
	slices.Sort(took)
	return latency{p50: took[len(took)/2].Round(10 * time.Microsecond), p99: took[len(took)*99/100].Round(10 * time.Microsecond)}
}

// inProcessCreates times the same CREATEs through the simulator's in-process gate on this
// plane (its webhook served from the test process, through the harness's relay), before the
// chart is installed: the figure the chart's Pods are compared with.
func (c *cluster) inProcessCreates(t *testing.T) latency {
	t.Helper()
	const name = "in-process"
	cfg := scenario.ScopeConfig(*defaultConfig(), name)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g := gateundertest.New(c.rc, c.cs, gateundertest.InProcess, cfg, &scenario.Scenario{Name: name}, name, gateundertest.Options{Run: name})
	if err := g.Start(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	l := c.creates(t, name)
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

// cluster is the plane, kube-proxy, and the system node with the gate's image.
type cluster struct {
	dir    string
	plane  *controlplane.Embedded
	rc     *rest.Config
	cs     kubernetes.Interface
	system *node.Node
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	// Long enough to wait out another package's test that holds the machine's kube-proxy.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := &cluster{dir: t.TempDir()}
	nc, err := node.StartCluster(ctx, node.ClusterConfig{
		Dir: c.dir, PlaneLogs: keptDir(t, "plane"), Image: buildImage(t, c.dir),
		System: node.Config{Name: "system-0", Index: systemIndex, Labels: map[string]string{systemLabel: "system"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nc.Stop(); err != nil {
			t.Error(err)
		}
	})
	c.plane, c.system = nc.Plane, nc.System
	checkPlaneCgroup(t, nc)
	c.rc = rest.CopyConfig(nc.Config)
	c.rc.QPS, c.rc.Burst = 1000, 2000 // no client-side wait in the latencies measured
	c.cs = kubernetes.NewForConfigOrDie(c.rc)
	return c
}

// checkPlaneCgroup: the plane's four processes run in its cgroup, so that the other work on
// the machine does not starve it (node.Cluster says why).
func checkPlaneCgroup(t *testing.T, nc *node.Cluster) {
	t.Helper()
	names, err := nc.PlaneProcesses()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not in the plane's cgroup, which holds %v", want, names)
		}
	}
}

// keptDir is a directory for logs that outlive the test when $STARTUPGATE_KEEP_LOGS names
// a directory, and a temporary one otherwise.
func keptDir(t *testing.T, name string) string {
	t.Helper()
	if d := os.Getenv("STARTUPGATE_KEEP_LOGS"); d != "" {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return t.TempDir()
}

// buildImage writes make image's tarball for the gate binary the tests run (make test's
// bin/test/gate, or one built here), with hack/image, the builder make image runs.
func buildImage(t *testing.T, dir string) string {
	t.Helper()
	bin, err := gateundertest.GateBinary()
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(dir, "startupgate.tar")
	cmd := exec.Command("go", "run", ".", "-binary", bin, "-out", tar, "-tag", gateImageRepo+":"+gateImageTag, "-arch", runtime.GOARCH)
	cmd.Dir = "../../hack/image"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the gate's image: %v\n%s", err, out)
	}
	return tar
}

// startNode starts a real node; it is stopped, and its Node deleted, when the test ends.
func (c *cluster) startNode(t *testing.T, name string, index int, labels map[string]string) *node.Node {
	t.Helper()
	n, err := node.Start(context.Background(), node.Config{Name: name, Index: index, Dir: c.dir, Kubeconfig: c.plane.Kubeconfig(), Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
		_ = c.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return n
}

// values are the chart's values for this cluster: the imported image, never pulled, and
// the system pool, which exclude names; everything else is the chart's default (two replicas, the webhook with
// failurePolicy Fail, the certificates the gate makes).
func (c *cluster) values() map[string]any {
	return platformValues("eks", map[string]any{
		"image":        map[string]any{"repository": gateImageRepo, "tag": gateImageTag, "pullPolicy": "Never"},
		"nodeSelector": map[string]any{systemLabel: "system"},
	})
}

// platformValues is a platform file of the chart (platforms/NAME.yaml), as helm install -f
// reads it, with more values set over it; it panics on a file that does not parse, which
// TestPlatformFiles reports first.
func platformValues(name string, set map[string]any) map[string]any {
	raw, err := os.ReadFile(filepath.Join(chartDir, "platforms", name+".yaml"))
	if err != nil {
		panic(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(raw, &vals); err != nil {
		panic(err)
	}
	maps.Copy(vals, set)
	return vals
}

// helm is the Helm SDK's configuration for namespace ns of this cluster.
func (c *cluster) helm(ns string) (*action.Configuration, error) {
	kubeconfig := c.plane.Kubeconfig()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := action.NewConfiguration()
	cfg.SetLogger(slog.NewTextHandler(io.Discard, nil))
	return cfg, cfg.Init(flags, ns, "secret")
}

// install is `helm install --create-namespace` of the chart in dir, without --wait: serving
// says when the release works.
func (c *cluster) install(ctx context.Context, dir, release, ns string, vals map[string]any) error {
	cfg, err := c.helm(ns)
	if err != nil {
		return err
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = release, ns, true
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, time.Minute
	if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
		return fmt.Errorf("helm install %s: %w", release, err)
	}
	return nil
}

// upgrade is `helm upgrade` of the release to vals, without --wait (the caller says when
// the rollout is done), and with --force-conflicts when force.
func (c *cluster) upgrade(ctx context.Context, vals map[string]any, force bool) error {
	cfg, err := c.helm(namespace)
	if err != nil {
		return err
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.WaitStrategy, up.Timeout, up.ForceConflicts = namespace, kube.HookOnlyStrategy, time.Minute, force
	if _, err := up.RunWithContext(ctx, releaseName, ch, vals); err != nil {
		return fmt.Errorf("helm upgrade: %w", err)
	}
	return nil
}

// serving waits for the release to work, step by step, and says which step did not: its
// Pods ready, then a Node CREATE tainted by its webhook through its Service (a dry run, so
// no Node is left). It returns when the webhook first served.
func (c *cluster) serving(ctx context.Context, ns, release string) (time.Time, error) {
	if err := c.podsReady(ctx, ns, release); err != nil {
		return time.Time{}, fmt.Errorf("step \"the gate's Pods are ready\": %w", err)
	}
	if err := gateundertest.WaitAdmission(ctx, c.cs, defaultConfig(), release); err != nil {
		return time.Time{}, fmt.Errorf("step \"the webhook taints a Node CREATE through its Service\": %w", err)
	}
	return time.Now(), nil
}

// podsReady waits for the release's Deployment to have every replica ready, and otherwise
// says what its Pods wait for.
func (c *cluster) podsReady(ctx context.Context, ns, release string) error {
	var d *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if d, err = c.cs.AppsV1().Deployments(ns).Get(ctx, release, metav1.GetOptions{}); err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		return d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas, nil
	})
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w; %s", err, c.podStates(ctx, ns))
}

// podStates describes each Pod in ns: phase, readiness, and what its containers wait for.
func (c *cluster) podStates(ctx context.Context, ns string) string {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		s := fmt.Sprintf("Pod %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				s += fmt.Sprintf(", %s waiting: %s %s", cs.Name, w.Reason, w.Message)
			}
			s += fmt.Sprintf(", %s ready=%t restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no Pods in " + ns
	}
	return strings.Join(out, "; ")
}

// podLogs is the log of each Pod in ns that selector picks, for a failure's message.
func (c *cluster) podLogs(ctx context.Context, ns, selector string) string {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "; " + err.Error()
	}
	var out strings.Builder
	for _, p := range pods.Items {
		b, err := c.cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To(int64(20))}).DoRaw(ctx)
		if err != nil {
			b = []byte(err.Error())
		}
		fmt.Fprintf(&out, "; log of %s: %s", p.Name, b)
	}
	return out.String()
}

// gatePods are the release's Pods.
func (c *cluster) gatePods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := c.cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + releaseName})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// checkReplicas: both replicas run on the system node; one of them holds the lease; each
// serves its metrics on its Pod IP; and the kubelet reports their memory.
func (c *cluster) checkReplicas(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pods := c.gatePods(t)
	if len(pods) != 2 {
		t.Fatalf("%d gate Pods, want the chart's 2: %s", len(pods), c.podStates(ctx, namespace))
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
		if p.Spec.NodeName != c.system.Name() {
			t.Errorf("gate Pod %s runs on %q, not the system node %s", p.Name, p.Spec.NodeName, c.system.Name())
		}
		c.checkMetrics(t, p)
	}
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.cs.CoordinationV1().Leases(namespace).Get(ctx, "startupgate.startup.k8s.io", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil //nolint:nilerr // no leader yet
		}
		holder = *l.Spec.HolderIdentity
		return true, nil
	})
	if err != nil {
		t.Fatalf("no gate replica took the lease: %v", err)
	}
	// controller-runtime names a candidate by its hostname, the Pod's name, and a UUID.
	name, _, _ := strings.Cut(holder, "_")
	if !slices.Contains(names, name) {
		t.Errorf("the lease is held by %q, not by a gate Pod (%v)", holder, names)
	}
	t.Logf("lease held by %s, one of %v", name, names)
	c.logMemory(t, names)
}

// checkMetrics scrapes a gate Pod's metrics on its Pod IP, as Prometheus would.
func (c *cluster) checkMetrics(t *testing.T, p corev1.Pod) {
	t.Helper()
	url := fmt.Sprintf("http://%s:8080/metrics", p.Status.PodIP)
	resp, err := http.Get(url) //nolint:gosec,noctx // the Pod's own address, in a test
	if err != nil {
		t.Errorf("scraping %s (Pod %s): %v", url, p.Name, err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "\nstartupgate_") {
		t.Errorf("scraping %s (Pod %s): %s, %v; no startupgate_ metric in %d bytes", url, p.Name, resp.Status, err, len(body))
	}
}

// logMemory logs the gate Pods' memory as their kubelet reports it (its stats summary, what
// metrics-server and kubectl top read), once it has measured them.
func (c *cluster) logMemory(t *testing.T, pods []string) {
	t.Helper()
	var got map[string]uint64
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = c.workingSets(ctx, pods)
		return err == nil && len(got) == len(pods), nil
	})
	if err != nil {
		t.Errorf("the kubelet reported the memory of %d of the gate's %d Pods within a minute", len(got), len(pods))
	}
	for name, ws := range got {
		t.Logf("gate Pod %s: working set %.1f MiB (kubelet stats summary)", name, float64(ws)/(1<<20))
	}
}

// workingSets reads the system node's stats summary for the named Pods' working sets;
// a Pod the kubelet has not measured yet (no figure, or 0) is left out.
func (c *cluster) workingSets(ctx context.Context, pods []string) (map[string]uint64, error) {
	kc, err := c.system.KubeletClient()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.system.KubeletURL()+"/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	resp, err := kc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var summary struct {
		Pods []struct {
			PodRef struct{ Name string } `json:"podRef"`
			Memory *struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&summary); err != nil {
		return nil, err
	}
	got := map[string]uint64{}
	for _, p := range summary.Pods {
		if slices.Contains(pods, p.PodRef.Name) && p.Memory != nil && p.Memory.WorkingSetBytes != nil && *p.Memory.WorkingSetBytes > 0 {
			got[p.PodRef.Name] = *p.Memory.WorkingSetBytes
		}
	}
	return got, nil
}

// realNodeJoins: a second real node registers with a real CREATE, which the gate's Pods
// taint; the example init DaemonSet runs on it until its readiness probe passes; the gate
// releases the node; and a workload Pod that waited for it only then starts there.
func (c *cluster) realNodeJoins(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const name = "worker-0"
	c.installInit(t, name)
	workload := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waits-for-" + name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: name},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "work", Image: node.ToolsImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sleep", "3600"}}},
		},
	}
	// The default ServiceAccount, which admission requires, is the controller-manager's to create.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().Pods("default").Create(ctx, workload, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("creating the workload Pod: %v", err)
	}
	r := defaultRule()
	n := c.startNode(t, name, workerIndex, nil)
	first := c.waitNode(t, n, func(*corev1.Node) bool { return true })
	if !r.HasTaint(first) {
		t.Fatalf("node %s was registered without the startup taint: %v", name, first.Spec.Taints)
	}
	released := c.waitNode(t, n, r.Completed)
	if r.HasTaint(released) {
		t.Errorf("node %s carries completedAt and still the taint: %v", name, released.Spec.Taints)
	}
	completed, err := strconv.ParseInt(released.Annotations[r.CompletedAnnotation], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err = c.cs.CoreV1().Pods("default").Get(ctx, workload.Name, metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		t.Fatalf("the workload Pod never ran: %v (%+v)", err, pod.Status)
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.LastTransitionTime.Unix() < completed {
			t.Errorf("workload Pod scheduled at %v, before the node's release at %v", cond.LastTransitionTime.Time, time.Unix(completed, 0))
		}
	}
	t.Logf("node %s: registered tainted at %v, released %ds later by the gate's Pods; workload running",
		name, first.CreationTimestamp.Time, completed-first.CreationTimestamp.Unix())
	c.statusHistory(t, name) // while the node is there: a cleanup of this subtest stops it
	c.preflight(t)
}

// preflight runs `gate preflight` against the installed chart, as an operator would: on
// this cluster (a system node the EKS file excludes, a worker the init DaemonSet lands on)
// it finds nothing wrong, and says which node exclude matches and that the webhook taints.
func (c *cluster) preflight(t *testing.T) {
	t.Helper()
	out, err := c.gateCLI(t, "preflight")
	if err != nil {
		t.Fatalf("gate preflight: %v\n%s", err, out)
	}
	for _, want := range []string{"ok       exclude[0] eks.amazonaws.com/nodegroup in (system) matches 1 node(s): system-0",
		"ok       webhook: a dry-run Node CREATE came back tainted", "no problem found"} {
		if !strings.Contains(out, want) {
			t.Errorf("gate preflight does not say %q:\n%s", want, out)
		}
	}
	t.Logf("gate preflight:\n%s", out)
}

// installInit applies deploy/startup-daemonset.yaml as a real node here runs it
// (node.ExampleInit), with a warm-up of 3 s, on the named node only: the fake nodes of the
// bursts have their own.
func (c *cluster) installInit(t *testing.T, nodeName string) {
	t.Helper()
	objs := c.initObjects(t, nodeName)
	for _, o := range append(objs.rbac, objs.daemonSet) {
		if err := c.client(t).Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// initObjects are deploy/startup-daemonset.yaml's objects as a real node here runs them
// (node.ExampleInit), with a warm-up of 3 s, the DaemonSet on the named node only.
type initObjects struct {
	rbac      []client.Object
	daemonSet *appsv1.DaemonSet
}

func (c *cluster) initObjects(t *testing.T, nodeName string) initObjects {
	t.Helper()
	raw, err := os.ReadFile("../startup-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := node.ExampleInit(raw, "3")
	if err != nil {
		t.Fatal(err)
	}
	var out initObjects
	for _, o := range objs {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			out.rbac = append(out.rbac, o)
			continue
		}
		ds.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: nodeName}
		out.daemonSet = ds
	}
	if out.daemonSet == nil {
		t.Fatal("deploy/startup-daemonset.yaml has no DaemonSet")
	}
	return out
}

// client is a controller-runtime client of the cluster.
func (c *cluster) client(t *testing.T) client.Client {
	t.Helper()
	cl, err := client.New(c.rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// burstScenario is 100 fake nodes joining at once for 300 pending Pods, judged as every
// scenario is: no Pod bound early, every node released.
const burstScenario = `
description: >-
  The gate installed from its chart, on a real node, takes a burst of 100 nodes for 300
  pending Pods. Hazard: a gate that works in-process and not as a Pod behind its Service.
workloads:
  - name: batch
    replicas: 300
init:
  - name: init
    ready: {after: 3s, jitter: 2s}
timeline:
  - at: 0s
    join: {count: 100, prefix: f}
expect:
  violations: none
  releasedWithin: 90s
timeout: 4m
`

// burst runs the burst against the installed gate (the simulator's --gate installed);
// started, if set, runs once admission works, before the first join.
func (c *cluster) burst(t *testing.T, name string, started func(context.Context, sim.Live)) {
	t.Helper()
	sc, err := scenario.Parse([]byte("name: " + name + "\n" + burstScenario))
	if err != nil {
		t.Fatal(err)
	}
	opts := sim.Options{Gate: gateundertest.Installed, Plane: c.plane}
	if started != nil {
		opts.Hooks = &sim.Hooks{Started: started}
	}
	r, err := sim.NewRunner(c.rc, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed {
		c.logGateLogs(t)
		c.logKubeletOnGate(t)
		t.Fatalf("%s failed: %v; errors %v; violations %v", name, res.Failures, res.Errors, res.Violations)
	}
	t.Logf("%s: %d nodes released by the gate's Pods, 0 Pods early; release after init ready p50 %.0f ms, p99 %.0f ms",
		name, res.Released, res.ReleaseLatencyMS.P50, res.ReleaseLatencyMS.P99)
}

// gateLogLines bounds what logGateLogs prints of each gate container's log: its last
// lines, and before them its warnings, errors and leader election and start-up lines.
const gateLogLines = 30

// logGateLogs prints, for a failed run, what the gate's containers logged on the system
// node. The gate runs in Pods here, not in the test's process, and their logs go with the
// node's directory when the test ends: without them a late release cannot be told from a
// lost lease, a restart or a stalled watch.
func (c *cluster) logGateLogs(t *testing.T) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(c.system.Dir(), "pod-logs", namespace+"_*", "*", "*.log"))
	if err != nil || len(paths) == 0 {
		t.Logf("no gate container logs under %s: %v", c.system.Dir(), err)
		return
	}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Logf("reading %s: %v", path, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		var notable []string
		for _, l := range lines[:max(0, len(lines)-gateLogLines)] {
			if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"warn"`) || strings.Contains(l, "leader") ||
				strings.Contains(l, "Starting") || strings.Contains(l, "Stopping") {
				notable = append(notable, l)
			}
		}
		t.Logf("%s: %d lines; notable before the last %d:\n%s\nlast %d:\n%s", path, len(lines), gateLogLines,
			strings.Join(notable[max(0, len(notable)-gateLogLines):], "\n"), gateLogLines,
			strings.Join(lines[max(0, len(lines)-gateLogLines):], "\n"))
	}
}

// kubeletGateWords pick the system kubelet's lines that say why a gate container stopped
// or was not ready: probe results, kills, sandboxes, OOM.
var kubeletGateWords = []string{"probe", "Killing", "sandbox", "OOM", "ContainerDied", "Back-off"}

// logKubeletOnGate prints the system node's kubelet lines about the gate's Pods that say why
// a container was restarted: a gate log that ends in "Stopping" with no error was stopped
// from outside, and only the kubelet says by what.
func (c *cluster) logKubeletOnGate(t *testing.T) {
	t.Helper()
	path := filepath.Join(c.system.Dir(), "kubelet.log")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Logf("reading the system kubelet's log: %v", err)
		return
	}
	var picked []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.Contains(l, namespace+"/") || strings.Contains(l, `status="ready"`) {
			continue
		}
		for _, w := range kubeletGateWords {
			if strings.Contains(l, w) {
				picked = append(picked, l)
				break
			}
		}
	}
	t.Logf("%s: its last %d lines on the gate's Pods (of %d):\n%s", path, gateLogLines, len(picked),
		strings.Join(picked[max(0, len(picked)-gateLogLines):], "\n"))
}

// killGate kills both gate containers at once, as a crash of each would, then tries a Node
// CREATE at once: with failurePolicy Fail it is refused until a replica serves again, or
// tainted. The burst that follows must lose nothing.
func (c *cluster) killGate(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, p := range c.gatePods(t) {
		if err := c.system.KillContainer(ctx, p.Status.ContainerStatuses[0].ContainerID); err != nil {
			t.Error(err)
		}
	}
	r := defaultRule()
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "probe-while-killed"}}
	out, err := c.cs.CoreV1().Nodes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err != nil:
		t.Logf("a Node CREATE right after the kill was refused, as failurePolicy Fail says: %v", err)
	case !r.HasTaint(out):
		t.Errorf("a Node CREATE right after the kill was admitted without the taint: %v", out.Spec.Taints)
	default:
		t.Logf("a Node CREATE right after the kill was tainted (a replica already served again)")
	}
	t.Cleanup(func() { c.checkRestarted(t) })
}

// checkRestarted: the kubelet restarted both killed containers, and they are ready again.
func (c *cluster) checkRestarted(t *testing.T) {
	t.Helper()
	if err := c.podsReady(context.Background(), namespace, releaseName); err != nil {
		t.Errorf("the gate's Pods after their containers were killed: %v", err)
	}
	for _, p := range c.gatePods(t) {
		if n := p.Status.ContainerStatuses[0].RestartCount; n < 1 {
			t.Errorf("gate Pod %s: %d restarts after its container was killed", p.Name, n)
		}
	}
}

// statusHistory runs `gate status --node NAME` as an operator would, from outside the
// cluster with a kubeconfig: the real node's history names its creation, its release from
// the record on the Node, and the gate's events about it.
func (c *cluster) statusHistory(t *testing.T, name string) {
	t.Helper()
	out, err := c.gateCLI(t, "status", "--node", name)
	if err != nil {
		t.Fatalf("gate status --node %s: %v\n%s", name, err, out)
	}
	for _, want := range []string{"created", "node          released", "event Normal  " + gate.ReasonHeld, "event Normal  " + gate.ReasonReleased} {
		if !strings.Contains(out, want) {
			t.Errorf("gate status --node %s does not say %q:\n%s", name, want, out)
		}
	}
	t.Logf("gate status --node %s:\n%s", name, out)
}

// brokenUpgrade: helm upgrade to a config the values schema lets through but the gate
// refuses at start (a node selector that does not parse). The new Pod crash-loops and the
// rollout stalls; the old Pods, their containers killed meanwhile, come back on the config
// they started with (their ConfigMap is named by its content, so the upgrade did not
// rewrite it under them) and the webhook serves. helm rollback then ends the episode.
func (c *cluster) brokenUpgrade(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	old := map[string]bool{}
	for _, p := range c.gatePods(t) {
		old[p.Name] = true
	}
	vals := c.values()
	vals["config"] = map[string]any{"nodeSelector": "pool in (a"}
	if err := c.upgrade(ctx, vals, false); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, p := range c.gatePods(t) {
			if !old[p.Name] && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the upgrade's Pod did not fail on the refused config: %v; %s", err, c.podStates(ctx, namespace))
	}
	for _, p := range c.gatePods(t) {
		if old[p.Name] {
			if err := c.system.KillContainer(ctx, p.Status.ContainerStatuses[0].ContainerID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		back := 0
		for _, p := range c.gatePods(t) {
			if cs := p.Status.ContainerStatuses; old[p.Name] && len(cs) > 0 && cs[0].RestartCount > 0 && cs[0].Ready {
				back++
			}
		}
		return back == len(old), nil
	}); err != nil {
		t.Fatalf("the old Pods, their containers killed during the broken rollout: %v; %s", err, c.podStates(ctx, namespace))
	}
	if _, err := c.serving(ctx, namespace, releaseName); err != nil {
		t.Fatalf("during the broken rollout: %v", err)
	}
	t.Logf("the upgrade's Pod crash-loops on the refused config; the old Pods restarted on theirs and serve")
	cfg, err := c.helm(namespace)
	if err != nil {
		t.Fatal(err)
	}
	rb := action.NewRollback(cfg)
	rb.WaitStrategy, rb.Timeout = kube.HookOnlyStrategy, time.Minute
	if err := rb.Run(releaseName); err != nil {
		t.Fatalf("helm rollback: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		pods := c.gatePods(t)
		return len(pods) == len(old) && c.podsReady(ctx, namespace, releaseName) == nil, nil
	}); err != nil {
		t.Fatalf("after helm rollback: %v; %s", err, c.podStates(ctx, namespace))
	}
}

// kustomizeInstall replaces the release by the other install path, the one the operations
// guide walks (kubectl apply -k deploy/overlays/self-signed, then generate-certs.sh), whose
// objects have the same names: helm uninstall, the overlay built and applied with the image
// and the system pool set as a user's patch would, the webhook's Secret and caBundle made as
// the script makes them; then it must serve, and take a burst.
func (c *cluster) kustomizeInstall(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cfg, err := c.helm(namespace)
	if err != nil {
		t.Fatal(err)
	}
	held := c.heldNode(t)
	un := action.NewUninstall(cfg)
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	if _, err := un.Run(releaseName); err != nil {
		t.Fatalf("helm uninstall: %v; %s%s", err, c.podStates(ctx, namespace), c.podLogs(ctx, namespace, "app.kubernetes.io/component=release-nodes"))
	}
	c.noGateTaint(ctx, t, held)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + releaseName})
		return err == nil && len(pods.Items) == 0, nil
	}); err != nil {
		t.Fatalf("the chart's Pods after helm uninstall: %v; %s", err, c.podStates(ctx, namespace))
	}
	cl, err := client.New(c.rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range buildOverlay(t, "self-signed") {
		if o.GetKind() == "Deployment" {
			localImage(t, o)
		}
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	c.selfSignedCert(t)
	began := time.Now()
	served, err := c.serving(ctx, namespace, "startupgate")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kustomize overlay applied to the webhook serving: %s", served.Sub(began).Round(time.Millisecond))
	c.burst(t, "kustomize-burst", nil)
}

// templateInstall replaces the kustomize install with the chart as a GitOps tool applies
// it: rendered as `helm template` renders it (no lookup, no hooks), the gate making its own
// certificates. The webhook serves; a sync that puts the rendered webhook configuration
// back, its caBundle taken out, stops it only until the gate writes the CA in again.
func (c *cluster) templateInstall(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cl, err := client.New(c.rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	for _, o := range buildOverlay(t, "self-signed") {
		if o.GetKind() == "Namespace" {
			continue // the chart's objects go into it next
		}
		if err := cl.Delete(ctx, o, &client.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	}); err != nil {
		t.Fatalf("the kustomize install's Pods after its deletion: %v; %s", err, c.podStates(ctx, namespace))
	}
	rendered := renderChart(t, c.values(), nil) // the default certificates: the gate's
	var mwc *unstructured.Unstructured
	for _, o := range rendered {
		if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
			continue
		}
		if o.GetKind() == "MutatingWebhookConfiguration" {
			mwc = o.DeepCopy()
		}
		if err := cl.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	began := time.Now()
	served, err := c.serving(ctx, namespace, releaseName)
	if err != nil {
		t.Fatalf("%v; %s", err, c.podLogs(ctx, namespace, "app.kubernetes.io/instance="+releaseName))
	}
	t.Logf("helm template applied, the gate making its certificates, to the webhook serving: %s", served.Sub(began).Round(time.Millisecond))

	// The sync: the rendered configuration, with no caBundle, over the live one.
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(mwc.GroupVersionKind())
	if err := cl.Get(ctx, client.ObjectKeyFromObject(mwc), live); err != nil {
		t.Fatal(err)
	}
	mwc.SetResourceVersion(live.GetResourceVersion())
	if err := cl.Update(ctx, mwc); err != nil {
		t.Fatal(err)
	}
	synced := time.Now()
	ca, err := c.cs.CoreV1().Secrets(namespace).Get(ctx, releaseName+"-webhook-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the gate's CA Secret: %v", err)
	}
	var bundle []byte
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mwc.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		bundle = got.Webhooks[0].ClientConfig.CABundle
		return string(bundle) == string(ca.Data["ca.crt"]), nil
	}); err != nil {
		t.Fatalf("caBundle a minute after a sync took it out: %q, want the CA of Secret %s", bundle, ca.Name)
	}
	if err := gateundertest.WaitAdmission(ctx, c.cs, defaultConfig(), releaseName); err != nil {
		t.Fatalf("the webhook after the gate wrote its CA back: %v", err)
	}
	t.Logf("a sync took the caBundle out; the gate wrote it back and the webhook served %s later", time.Since(synced).Round(time.Millisecond))
}

// heldNode registers a Node through the chart's webhook that nothing will release (no
// kubelet, no init Pod): the gate holds it.
func (c *cluster) heldNode(t *testing.T) string {
	t.Helper()
	const name = "held-at-uninstall"
	n, err := c.cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if !hasGateTaint(n) {
		t.Fatalf("node %s registered without the gate's taint: %v", name, n.Spec.Taints)
	}
	return name
}

// noGateTaint: after helm uninstall no node carries the gate's taint; the held node's came
// off in the pre-delete Job, with its completion recorded.
func (c *cluster) noGateTaint(ctx context.Context, t *testing.T, held string) {
	t.Helper()
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; hasGateTaint(n) {
			t.Errorf("node %s still carries the gate's taint after helm uninstall: %v", n.Name, n.Spec.Taints)
		}
	}
	n, err := c.cs.CoreV1().Nodes().Get(ctx, held, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Annotations[config.DefaultCompletedAnnotation]; !ok {
		t.Errorf("the held node was not released by the uninstall Job: annotations %v", n.Annotations)
	}
	t.Logf("helm uninstall released the held node %s and left no gate taint on %d nodes", held, len(nodes.Items))
}

func hasGateTaint(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == config.DefaultTaintKey {
			return true
		}
	}
	return false
}

// localImage sets the overlay's Deployment to the imported image, never pulled, on the
// system pool.
func localImage(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = gateImageRepo+":"+gateImageTag, corev1.PullNever
	d.Spec.Template.Spec.NodeSelector = map[string]string{systemLabel: "system"}
	// The base requires AKS's system pool or a control plane, neither of which this cluster
	// has: its system node is an EKS node group's.
	d.Spec.Template.Spec.Affinity.NodeAffinity = nil
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&d)
	if err != nil {
		t.Fatal(err)
	}
	o.Object = m
}

// selfSignedCert does what generate-certs.sh does (this machine has no kubectl): a serving
// certificate for the webhook Service in Secret startupgate-webhook-tls, and its CA as the
// webhook's caBundle.
func (c *cluster) selfSignedCert(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	svc := "startupgate-webhook"
	names := servingcert.Names{DNS: []string{svc, svc + "." + namespace, svc + "." + namespace + ".svc", svc + "." + namespace + ".svc.cluster.local"}}
	ca, err := servingcert.Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), names)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{"ca.crt": ca}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if data[f], err = os.ReadFile(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "startupgate-webhook-tls", Namespace: namespace}, Type: corev1.SecretTypeTLS, Data: data}
	if _, err := c.cs.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wh, err := c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "startupgate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range wh.Webhooks {
		wh.Webhooks[i].ClientConfig.CABundle = ca
	}
	if _, err := c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, wh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// brokenChart is the negative control: a chart whose gate listens for the webhook on a port
// other than the one its Service targets renders, lints and applies, and its Pods pass their
// probes, but no Node CREATE gets through. serving must fail, naming that step.
func (c *cluster) brokenChart(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "startupgate")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(dir, "templates", "deployment.yaml")
	raw, err := os.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	const flag = "- --webhook-port={{ .Values.ports.webhook }}"
	broken := strings.Replace(string(raw), flag, "- --webhook-port=9444", 1)
	if broken == string(raw) {
		t.Fatalf("the chart's Deployment no longer passes %s; update this control", flag)
	}
	if err := os.WriteFile(tmpl, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	const release, ns = "broken", "broken-system"
	if err := c.install(ctx, dir, release, ns, c.values()); err != nil {
		t.Fatal(err)
	}
	_, err = c.serving(ctx, ns, release+"-startupgate")
	const step = `step "the webhook taints a Node CREATE through its Service"`
	if err == nil || !strings.Contains(err.Error(), step) {
		t.Fatalf("a gate that does not listen where its Service points: got %v, want a failure of %s", err, step)
	}
	t.Logf("caught: %v", err)
}

// defaultConfig is the chart's gate's: its values set no config.
func defaultConfig() *config.Config {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		panic(err) // the contract's own defaults
	}
	return &cfg
}

// defaultRule is the rule of the default config.
func defaultRule() *rule.Rule { return defaultConfig().EffectiveRules()[0] }

// waitNode waits for the real node's Node to exist and satisfy ok (node.Node.Wait).
func (c *cluster) waitNode(t *testing.T, n *node.Node, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	got, err := n.Wait(context.Background(), c.cs, ok)
	if err != nil {
		t.Fatal(errors.Join(err, c.system.Exited()))
	}
	return got
}

package sim

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// chartMetricNames is written by deploy/helm's TestMetricNamesFile from the chart's
// PrometheusRule and dashboard.
const chartMetricNames = "../deploy/helm/testdata/metric-names.txt"

var (
	// notFromGate are series Prometheus makes itself for every target.
	notFromGate = []string{"up"}
	// unobserved are the metrics this test causes no event for (a timeout, a re-taint, a
	// condition rule's taint and budget, a replacement's storm guard): a vector without observations is not on
	// /metrics, so these are checked against the collectors the gate package registers.
	unobserved = []string{
		"startupgate_timeouts_total", "startupgate_retaints_total", "startupgate_condition_taints_total",
		"startupgate_condition_tainted_nodes", "startupgate_budget_exhausted", "startupgate_replace_stopped",
	}
)

// TestMetricNamesExported: every metric the chart's alerts and dashboard read is one the
// gate exports. It runs cmd/gate (leader-elected, as deployed) on the embedded plane,
// makes it serve the webhook, hold and release a node and flag a DaemonSet lacking the
// toleration, then scrapes its /metrics over HTTP. Every name must be on that page, except
// Prometheus's own `up` and the few metrics of events the test does not cause (unobserved),
// which must be collectors registered by the gate package.
func TestMetricNamesExported(t *testing.T) {
	want := readChartMetricNames(t)
	rc := sharedPlane(t)
	cs := kubernetes.NewForConfigOrDie(rc)
	// Built first: on a busy machine the build alone can outlast the timeout below.
	if _, err := gateundertest.GateBinary(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const name = "metric-names"
	cfg := scenario.ScopeConfig(config.DefaultConfig(), name)
	_, leader := startGateProcesses(ctx, t, rc, cs, cfg, name, 1, gateundertest.Options{})

	createObjects(ctx, t, cs, name)
	released := func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && n.Annotations[cfg.CompletedAnnotation] != "", nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, released); err != nil {
		t.Fatalf("the gate did not release node %s: %v", name, err)
	}
	// The release's histograms are observed right after its write.
	var scraped map[string]bool
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		scraped = scrape(ctx, t, leader.MetricsURL())
		return scraped["startupgate_hold_seconds_bucket"] && scraped["startupgate_component_missing_toleration"], nil
	})
	if err != nil {
		t.Logf("waiting for the release and toleration metrics: %v", err)
	}

	registered := registeredNames()
	if missing := notExported([]string{"startupgate_no_such_metric"}, scraped, registered); len(missing) != 1 {
		t.Fatalf("a name the gate does not export passes the check: %v", missing)
	}
	for _, m := range notExported(want, scraped, registered) {
		t.Errorf("%s names metric %s, which the gate does not export", chartMetricNames, m)
	}
	for _, m := range want {
		if !scraped[m] && !slices.Contains(notFromGate, m) {
			t.Logf("%s: not on /metrics, checked against the registered collectors", m)
		}
	}
}

// startGateProcesses runs replicas cmd/gate processes (leader-elected, as deployed) with
// cfg on the plane at rc, stopped when the test ends, and returns them with their leader.
func startGateProcesses(ctx context.Context, t *testing.T, rc *rest.Config, cs kubernetes.Interface, cfg config.Config,
	name string, replicas int, opts gateundertest.Options) (*gateundertest.Harness, *gateundertest.Replica) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: name, GateProcess: &scenario.GateProcess{Replicas: replicas}}
	g := gateundertest.New(rc, cs, gateundertest.InProcess, cfg, sc, "default", opts)
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	if err := g.Start(ctx, replicas); err != nil {
		t.Fatal(err)
	}
	leader, err := g.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g, leader
}

// notExported returns the names in want that are neither scraped nor allowed otherwise.
func notExported(want []string, scraped, registered map[string]bool) []string {
	var out []string
	for _, m := range want {
		switch {
		case scraped[m], slices.Contains(notFromGate, m):
		case slices.Contains(unobserved, m) && registered[m]:
		default:
			out = append(out, m)
		}
	}
	return out
}

// createObjects makes the gate do what the chart's metrics describe: a DaemonSet of the
// init component without the startup taint's toleration (it selects no node, so it runs
// nothing), and a node held by the webhook's taint whose init Pod is ready.
func createObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	initLabels := map[string]string{"startup.k8s.io/component": "init", scenario.Label: name}
	// The DaemonSet selects one label more than the init Pod below has: were the Pod its
	// orphan, the DaemonSet controller would adopt it, racing the status update here.
	dsLabels := map[string]string{"daemonset": name}
	maps.Copy(dsLabels, initLabels)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dsLabels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{scenario.Label: "none"},
					Containers:   []corev1.Container{{Name: "init", Image: "init"}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().DaemonSets("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scenario.Label: name}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// An init Pod counts only if created after its node; creation times have seconds.
	time.Sleep(1100 * time.Millisecond)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: initLabels},
		Spec: corev1.PodSpec{
			NodeName:    name,
			Containers:  []corev1.Container{{Name: "init", Image: "init"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	now := metav1.Now()
	created.Status = corev1.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "init", Image: "init", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scrape returns the sample names on the page at url: a histogram's _bucket, _sum and
// _count, a counter's or gauge's own name.
func scrape(ctx context.Context, t *testing.T, url string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for name, f := range scrapeFamilies(ctx, t, url) {
		out[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = true, true
		}
	}
	return out
}

// scrapeFamilies reads and parses the Prometheus text page at url.
func scrapeFamilies(ctx context.Context, t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registeredNames are the names of every collector on controller-runtime's registry in this
// process, where the gate package registers its own as cmd/gate does. A Desc has no name
// getter; its String has the name.
func registeredNames() map[string]bool {
	ch := make(chan *prometheus.Desc)
	go func() {
		if r, ok := metrics.Registry.(*prometheus.Registry); ok {
			r.Describe(ch)
		}
		close(ch)
	}()
	out := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

func readChartMetricNames(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(chartMetricNames)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no metric", chartMetricNames)
	}
	return out
}

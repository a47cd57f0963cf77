package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/kubelet"
)

// The large phase's static nodes: registered through the fake kubelet (a real CREATE,
// with the profile's size and shape, Ready in its first status), each with its init Pod
// bound, Running and Ready, as a released node of a cluster that runs the gate has. They
// carry the scenario label with a value no run uses, so that no run's gate rules, init
// DaemonSets or workloads select them, and the runs' clean-up leaves them be.
const (
	staticScenario  = "bench-static"
	staticNamespace = "bench-static"
	// staticWriters bounds the registrations in flight.
	staticWriters = 48
	// staticLease is the static nodes' Lease renewal period: never, within a run (the
	// plane's grace period holds them Ready instead).
	staticLease = 1000 * time.Hour
)

type staticNodes struct {
	names []string
}

// staticName is the i-th static node's name.
func staticName(i int) string { return fmt.Sprintf("static-%06d", i) }

// fill registers static nodes up to n, each with its init Pod, and waits until every Pod
// is Ready and the last nodes registered have lost the not-ready taint the apiserver
// gives every new Node (the node-lifecycle controller's write): the plane is then quiet.
func (lg *large) fill(ctx context.Context, n int, sz *LargeSize) error {
	start := time.Now()
	if lg.static == nil {
		lg.static = &staticNodes{}
		_, err := lg.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: staticNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	have := len(lg.static.names)
	var podsReady atomic.Int64
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	k, err := lg.staticKubelet(kctx, &podsReady)
	if err != nil {
		return err
	}
	lg.progress("large: registering static nodes %d to %d", have, n)
	var done atomic.Int64
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				lg.progress("large: %d of %d static nodes registered, %d with their init Pods Ready", have+int(done.Load()), n, have+int(podsReady.Load()))
			}
		}
	}()
	defer close(stop)
	end, stopped, err := lg.register(ctx, k, have, n, &done)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := have; i < end; i++ {
		lg.static.names = append(lg.static.names, staticName(i))
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Minute, true, func(context.Context) (bool, error) {
		return podsReady.Load() >= int64(end-have), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the static init Pods to be Ready (%d of %d): %w", podsReady.Load(), end-have, err)
	}
	if err := lg.untainted(ctx, lg.static.names[max(have, end-200):]); err != nil {
		return err
	}
	sz.FillS = round2(time.Since(start).Seconds())
	lg.progress("large: %d static nodes in %.0fs", end, sz.FillS)
	if err := lg.planeFigures(ctx, sz); err != nil {
		return err
	}
	if stopped != "" {
		sz.Reached = end
		sz.Errors = append(sz.Errors, fmt.Sprintf("the fill stopped at %d static nodes: %s", end, stopped))
		return fmt.Errorf("%w at %d static nodes: %s", errMemoryLow, end, stopped)
	}
	return nil
}

// staticKubelet starts the static nodes' kubelet, which counts into ready the init Pods it
// has made Ready.
func (lg *large) staticKubelet(ctx context.Context, ready *atomic.Int64) (*kubelet.Kubelet, error) {
	kc := rest.CopyConfig(lg.rc)
	kc.UserAgent = sim.KubeletUserAgent
	kc.QPS, kc.Burst = -1, 0
	controlplane.Protobuf(kc) // as a kubelet speaks: JSON would cost the apiserver a slower decode of every Node
	kc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &statusCounter{next: rt, n: ready} })
	kcs, err := kubernetes.NewForConfig(kc)
	if err != nil {
		return nil, err
	}
	k := &kubelet.Kubelet{Client: kcs, Namespace: staticNamespace, Scenario: staticScenario, Seed: lg.opts.Seed,
		Version: controlplane.KubeVersion, Profile: lg.opts.Profile, LeaseRenew: staticLease,
		Errors: func(err error) { lg.progress("static kubelet: %v", err) }}
	return k, k.Start(ctx)
}

// register registers static nodes have to n-1 through k, each with its init Pod, at most
// staticWriters at once, unless the machine's memory runs low first: it returns the index
// past the last node registered, and why it stopped short ("" if it did not).
func (lg *large) register(ctx context.Context, k *kubelet.Kubelet, have, n int, done *atomic.Int64) (int, string, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(staticWriters)
	end, stopped := have, ""
	for ; end < n && gctx.Err() == nil; end++ {
		if (end-have)%memoryCheckEvery == 0 {
			if stopped = memoryLow(); stopped != "" {
				break
			}
		}
		name := staticName(end)
		g.Go(func() error {
			if err := k.Register(gctx, name, nil, nil, kubelet.NoReadyReport); err != nil {
				return err
			}
			err := kubelet.Retry(gctx, func() error {
				_, err := lg.cs.CoreV1().Pods(staticNamespace).Create(gctx, staticInitPod(name), metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("creating the init Pod of %s: %w", name, err)
			}
			done.Add(1)
			return nil
		})
	}
	return end, stopped, g.Wait()
}

// untainted waits until none of names carries the not-ready taint any more.
func (lg *large) untainted(ctx context.Context, names []string) error {
	left := names
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		var still []string
		for _, name := range left {
			n, err := lg.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, t := range n.Spec.Taints {
				if t.Key == corev1.TaintNodeNotReady {
					still = append(still, name)
					break
				}
			}
		}
		left = still
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the node-lifecycle controller to untaint the static nodes (%d left): %w", len(left), err)
	}
	return nil
}

// planeFigures reads one static node as the apiserver serves it (protobuf, as it is
// stored, and JSON), the database size and the plane's memory.
func (lg *large) planeFigures(ctx context.Context, sz *LargeSize) error {
	if len(lg.static.names) == 0 {
		return nil
	}
	name := lg.static.names[len(lg.static.names)-1]
	for _, f := range []struct {
		accept string
		into   *int
	}{{"application/vnd.kubernetes.protobuf", &sz.NodeProtobufBytes}, {"application/json", &sz.NodeJSONBytes}} {
		raw, err := lg.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/"+name).SetHeader("Accept", f.accept).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("reading node %s as %s: %w", name, f.accept, err)
		}
		*f.into = len(raw)
	}
	raw, err := lg.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	// The first is the current name of the database size, the second its deprecated one.
	for _, m := range []string{"apiserver_storage_size_bytes", "apiserver_storage_db_total_size_in_bytes"} {
		if v, err := metricSum(raw, m, nil); err == nil && v > 0 {
			sz.EtcdBytes = uint64(v)
			break
		}
	}
	sz.RSS = map[string]uint64{}
	for name, pid := range benchProcesses() {
		sz.RSS[name] = processRSS(pid)
	}
	return nil
}

// processRSS is a process's resident memory in bytes, from /proc (0 when unknown).
func processRSS(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			b, _ := parseKB(v)
			return b
		}
	}
	return 0
}

// statusCounter counts the successful Pod status writes of the static nodes' kubelet: its
// init Pods turned Running and Ready.
type statusCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

// RoundTrip sends req and counts it if it was a successful Pod status write.
func (c *statusCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPut && resp.StatusCode == http.StatusOK &&
		strings.Contains(req.URL.Path, "/pods/") && strings.HasSuffix(req.URL.Path, "/status") {
		c.n.Add(1)
	}
	return resp, err
}

// staticInitPod is a static node's init Pod, shaped as a DaemonSet's: the component label
// the gate caches, the DaemonSet controller's labels and tolerations, a container with
// requests, an env and a host mount. It is bound at creation, as no scheduler is needed for
// a Pod that names its node.
func staticInitPod(node string) *corev1.Pod {
	key, value, _ := strings.Cut(config.DefaultInitLabel, "=")
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "init-" + node, Namespace: staticNamespace,
			Labels:      map[string]string{key: value, "app.kubernetes.io/name": "node-init", "controller-revision-hash": "6c8f9d7b5d", "pod-template-generation": "1"},
			Annotations: map[string]string{"kubectl.kubernetes.io/default-container": "init"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "init", Image: "registry.example.com/platform/node-init:v1.4.2",
				Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host/var/lib"}},
			}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib"}}}},
			Tolerations: []corev1.Toleration{
				exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
				exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule), exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
				exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule), exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
				exists(config.DefaultTaintKey, corev1.TaintEffectNoSchedule),
			},
			PriorityClassName:             "system-node-critical",
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
		},
	}
}

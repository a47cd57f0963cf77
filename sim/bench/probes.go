package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/kubelet"
	"github.com/startupgate/startupgate/sim/scenario"
)

// memory measures the gate process at the settled largest burst: heap and RSS after a
// forced GC, then again once the filler Pods are stored. (The gate's label-selected watch
// is never sent them, so there is nothing of theirs to wait for on its side.)
func (b *bench) memory(ctx context.Context, live sim.Live) error {
	if len(live.Gate().Replicas()) == 0 {
		return fmt.Errorf("memory phase: no gate replica")
	}
	r := live.Gate().Replicas()[0]
	m0, err := gateMemory(ctx, r)
	if err != nil {
		return err
	}
	b.rep.MemoryNodes = len(live.Nodes())
	b.rep.GateHeapBytes.Pods0, b.rep.GateRSSBytes.Pods0 = m0.heap, m0.rss
	b.progress("memory: gate heap %d MiB, rss %d MiB at %d nodes; adding %d workload Pods",
		m0.heap>>20, m0.rss>>20, b.rep.MemoryNodes, b.opts.Pods)
	// The filler Pods get a namespace of their own, deleted (in the background, by the
	// namespace controller) once measured: in the run's namespace, the run's cleanup had to
	// delete 100,000 Pods in one request, which outlived the apiserver's request timeout.
	nss := live.Client().CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-filler-",
		Labels: map[string]string{scenario.Label: "bench-filler"}}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("memory phase: %w", err)
	}
	if err := fillPods(ctx, live.Client(), ns.Name, b.opts.Pods); err != nil {
		return err
	}
	b.rep.FillerPods = b.opts.Pods
	m1, err := gateMemory(ctx, r)
	if err != nil {
		return err
	}
	if err := nss.Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("memory phase: deleting %s: %w", ns.Name, err)
	}
	b.rep.GateHeapBytes.Pods100k, b.rep.GateRSSBytes.Pods100k = m1.heap, m1.rss
	if m0.heap > 0 {
		b.rep.GateHeapRatio = round2(float64(m1.heap) / float64(m0.heap))
	}
	b.progress("memory: gate heap %d MiB, rss %d MiB with %d more Pods", m1.heap>>20, m1.rss>>20, b.opts.Pods)
	return nil
}

// profile takes a CPU profile of the gate over the first 20s of the reference burst, for
// the question "what limits it" — answered by a profile, not a guess.
func (b *bench) profile(ctx context.Context, live sim.Live, path string) {
	if len(live.Gate().Replicas()) == 0 {
		return
	}
	if err := saveCPUProfile(ctx, live.Gate().Replicas()[0], 20*time.Second, path); err != nil {
		b.progress("gate CPU profile: %v", err)
		return
	}
	b.progress("gate CPU profile: %s (go tool pprof -top bin/gate %s)", path, path)
}

// saveCPUProfile saves a CPU profile of replica r over the next d to path.
func saveCPUProfile(ctx context.Context, r *gateundertest.Replica, d time.Duration, path string) error {
	raw, err := httpGet(ctx, fmt.Sprintf("%s/profile?seconds=%d", r.PprofURL(), int(d.Seconds())))
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// handlerLatency reads the gate's own histogram of its webhook handler — the time inside
// the gate, where the apiserver's histogram also counts the call's way there and back.
func (b *bench) handlerLatency(ctx context.Context, live sim.Live) error {
	if len(live.Gate().Replicas()) == 0 {
		return nil
	}
	raw, err := httpGet(ctx, live.Gate().Replicas()[0].MetricsURL())
	if err != nil {
		return fmt.Errorf("scraping the gate: %w", err)
	}
	h, err := deltaOf(nil, raw, "controller_runtime_webhook_latency_seconds", map[string]string{"webhook": gate.NodeWebhookPath})
	if err != nil {
		return err
	}
	b.rep.AdmissionMS.GateHandler = h.quantiles()
	return nil
}

// gateMem is a gate's memory after a forced GC: its heap in use (the spans that hold at
// least one live object), its live heap (the objects themselves) and its RSS. After an
// initial list the first is well above the second: the objects the gate keeps were made
// among the garbage of decoding the full ones, and a span stays in use while any of its
// objects lives.
type gateMem struct{ heap, live, rss uint64 }

// gateMemory forces a GC in the gate (pprof's heap endpoint with gc=1) so that neither
// heap figure counts garbage, then reads its metrics.
func gateMemory(ctx context.Context, r *gateundertest.Replica) (gateMem, error) {
	if _, err := httpGet(ctx, r.PprofURL()+"/heap?gc=1"); err != nil {
		return gateMem{}, fmt.Errorf("forcing a GC in the gate: %w", err)
	}
	raw, err := httpGet(ctx, r.MetricsURL())
	if err != nil {
		return gateMem{}, fmt.Errorf("scraping the gate: %w", err)
	}
	v, err := gauges(raw, "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes")
	if err != nil {
		return gateMem{}, err
	}
	return gateMem{heap: uint64(v[0]), live: uint64(v[1]), rss: uint64(v[2])}, nil
}

// fillPods creates n bare Pods in ns for a scheduler that does not exist, so they stay
// pending and cost the plane nothing but storage and watch traffic. They carry none of the
// gate's labels, only a key (app) that components select by: the gate must not pay for them.
func fillPods(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", i), Labels: map[string]string{"sim.startupgate.io/filler": "true", "app": "bench-filler"}},
				Spec: corev1.PodSpec{SchedulerName: "startupgate-bench-nobody",
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			}
			err := kubelet.Retry(gctx, func() error {
				_, err := cs.CoreV1().Pods(ns).Create(gctx, p, metav1.CreateOptions{})
				return client.IgnoreAlreadyExists(err)
			})
			if err != nil {
				return fmt.Errorf("creating filler pod: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err() // cancelled before every Pod was even started
}

package gateundertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/record"
	"github.com/startupgate/startupgate/sim/scenario"
)

// floor is the plane's floor: the least any release can cost on this plane. It is a
// deliberately trivial controller — when an init Pod is seen Ready on a node that carries the
// taint, write the node once without it — and it is not the gate: no readiness rules, no
// holds, no several components, no leader election. The benchmark runs it on the same burst
// as the gate and reports the ratio of their latencies, so that a slow plane (a busy
// machine) is not mistaken for a slow gate.
//
// Like the gate it removes only its own taint, guarded by the resourceVersion it read, and
// sets completedAt so that the recorder counts the release.
type floor struct {
	cs    kubernetes.Interface
	cfg   *config.Config
	nodes listersv1.NodeLister
	pods  cache.Indexer // init Pods, indexed by node name

	mu   sync.Mutex
	done map[types.UID]bool // nodes released or being released
}

// floorChildEnv carries the floor's arguments to its child process: the kubeconfig, the
// gate Config file, the scenario and its namespace, comma-separated.
const floorChildEnv = "STARTUPGATE_SIM_FLOOR"

// RunFloorChild runs the floor controller and exits, if this process is the floor's child
// process (the harness re-executes the running binary to get one). Otherwise it returns at
// once. cmd/simulate's main and the TestMain of every test package that runs the floor call
// it first thing.
func RunFloorChild() {
	arg, ok := os.LookupEnv(floorChildEnv)
	if !ok {
		return
	}
	if err := floorChild(arg); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func floorChild(arg string) error {
	parts := strings.Split(arg, ",")
	if len(parts) != 4 {
		return fmt.Errorf("%s=%q: want KUBECONFIG,CONFIG,SCENARIO,NAMESPACE", floorChildEnv, arg)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", parts[0])
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 1000, 2000
	raw, err := os.ReadFile(parts[1])
	if err != nil {
		return err
	}
	cfg, err := config.LoadConfig(raw)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return runFloor(ctx, rc, &cfg, parts[2], parts[3])
}

// runFloor runs the floor controller until ctx ends. The scenario's init Pods are in ns and
// its nodes carry the scenario label; its components share a label key (one Pod scope).
func runFloor(ctx context.Context, rc *rest.Config, cfg *config.Config, name, ns string) error {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "startupgate-floor"
	controlplane.Protobuf(rc) // as the gate's controller-runtime client does: the same footing
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	nf := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = scenario.Label + "=" + name }))
	pf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = cfg.PodScopes()[0].Selector.String() }))
	pi := pf.Core().V1().Pods().Informer()
	if err := pi.AddIndexers(cache.Indexers{byNode: podNode}); err != nil {
		return err
	}
	ni := nf.Core().V1().Nodes().Informer()
	f := &floor{cs: cs, cfg: cfg, nodes: nf.Core().V1().Nodes().Lister(), pods: pi.GetIndexer(), done: map[types.UID]bool{}}
	// Both kinds of event look at both caches: an informer stores an object before it calls
	// the handlers, so whichever of the node and its Ready Pod arrives second finds the other.
	// (Started after the node joined, the floor can list the Ready Pod before the node.)
	if _, err := pi.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.pod(ctx, o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { f.pod(ctx, o.(*corev1.Pod)) },
	}); err != nil {
		return err
	}
	if _, err := ni.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.node(ctx, o.(*corev1.Node)) },
		UpdateFunc: func(_, o any) { f.node(ctx, o.(*corev1.Node)) },
	}); err != nil {
		return err
	}
	nf.Start(ctx.Done())
	pf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ni.HasSynced, pi.HasSynced) {
		return fmt.Errorf("floor informers did not sync")
	}
	<-ctx.Done()
	return nil
}

const byNode = "node"

func podNode(o any) ([]string, error) {
	if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// pod releases the Pod's node if the Pod is Ready.
func (f *floor) pod(ctx context.Context, p *corev1.Pod) {
	if p.Spec.NodeName == "" || !record.PodIsReady(p, f.cfg) {
		return
	}
	if n, err := f.nodes.Get(p.Spec.NodeName); err == nil {
		f.release(ctx, n)
	}
}

// node releases the node if one of its init Pods is Ready.
func (f *floor) node(ctx context.Context, n *corev1.Node) {
	pods, _ := f.pods.ByIndex(byNode, n.Name)
	for _, o := range pods {
		if record.PodIsReady(o.(*corev1.Pod), f.cfg) {
			f.release(ctx, n)
			return
		}
	}
}

// release releases the node, once, if it still has the taint. The write runs on its own
// goroutine: a write must never hold up the next event.
func (f *floor) release(ctx context.Context, n *corev1.Node) {
	if !f.cfg.HasTaint(n) {
		return
	}
	f.mu.Lock()
	busy := f.done[n.UID]
	f.done[n.UID] = true
	f.mu.Unlock()
	if !busy {
		go f.write(ctx, n)
	}
}

// write writes the node without the taint, guarded by resourceVersion. On a conflict it
// reads the node afresh and tries again; on any other error (a timeout on a busy plane) it
// tries again after a pause, as a controller's workqueue would, until the node is gone or
// has lost the taint.
func (f *floor) write(ctx context.Context, n *corev1.Node) {
	for ctx.Err() == nil {
		patch, err := floorPatch(n, f.cfg)
		if err != nil {
			return
		}
		_, err = f.cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return
		}
		if !apierrors.IsConflict(err) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(floorRetry):
			}
		}
		fresh, err := f.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return
		case err == nil && !f.cfg.HasTaint(fresh):
			return
		case err == nil:
			n = fresh
		}
	}
}

// floorRetry is the floor's pause before it writes again after an error other than a
// conflict.
const floorRetry = 100 * time.Millisecond

// floorPatch is a merge patch that replaces the taint list with the same list minus the
// gate's taint and sets completedAt, guarded by the node's resourceVersion.
func floorPatch(n *corev1.Node, cfg *config.Config) ([]byte, error) {
	taints := make([]corev1.Taint, 0, len(n.Spec.Taints))
	for _, t := range n.Spec.Taints {
		if !(t.Key == cfg.Taint.Key && t.Effect == cfg.Taint.Effect) {
			taints = append(taints, t)
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": n.ResourceVersion,
			"annotations":     map[string]string{cfg.CompletedAnnotation: time.Now().UTC().Format(time.RFC3339)},
		},
		"spec": map[string]any{"taints": taints},
	})
}

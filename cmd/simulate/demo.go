package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim"
	"github.com/startupgate/startupgate/sim/autoscaler"
	"github.com/startupgate/startupgate/sim/report"
	"github.com/startupgate/startupgate/sim/scenario"
)

// demoScenario is the autoscale demo: a Deployment scaled from 0, Karpenter and the gate.
const demoScenario = "scenarios/demo/karpenter-autoscale.yaml"

// runDemo runs the autoscale demo on the embedded plane: Karpenter launches the nodes a
// Deployment scaled from 0 needs, the gate holds each until its init Pod is Ready, and the
// console prints a line per NodeClaim and node as each step happens. The gate runs from its
// chart on a real node when it can (demonode.go).
func runDemo(args []string, stdout, stderr io.Writer) (code int, err error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("scenario", demoScenario, "the demo's scenario file")
	htmlOut := fs.String("html", "out/demo.html", "write the HTML timeline here")
	gateLog := fs.String("gate-log", "", "write the simulator's logs, and an in-process gate's, here (default: a temporary file); a gate from the chart logs through its Pods")
	planeLogs := fs.String("plane-logs", "", "keep the plane's, Karpenter's and the real node's logs in this directory")
	var o chartOpts
	fs.StringVar(&o.image, "image", "", "the gate's image tarball (make image): with it, on a machine that can run a real node, the gate runs from its Helm chart on a real system node; else in the simulator's process")
	fs.StringVar(&o.imageRef, "image-ref", "ghcr.io/startupgate/startupgate:dev", "the name:tag of the image in that tarball")
	fs.StringVar(&o.helm, "helm", "helm", "the helm binary that installs the chart")
	fs.StringVar(&o.chart, "chart", "deploy/helm/startupgate", "the chart to install")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	o.planeLogs = *planeLogs
	sc, err := scenario.Load(*file)
	if err != nil {
		return 2, err
	}
	if sc.Autoscaler == nil {
		return 2, fmt.Errorf("%s: the demo needs an autoscaler section", *file)
	}
	logPath, err := setLogs(*gateLog, false, stderr)
	if err != nil {
		return 2, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "the simulator's logs (and an in-process gate's): %s\n", logPath)
	d, err := startDemoPlane(ctx, stdout, o)
	if err != nil {
		return 1, err
	}
	defer func() {
		// A teardown that left mounts, cgroups or rules behind fails the demo.
		if serr := d.stop(); serr != nil {
			fmt.Fprintf(stderr, "simulate: stopping the demo's plane and nodes: %v\n", serr)
			code = max(code, 1)
		}
	}()
	rc := d.rc
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return 1, err
	}
	cfg := scenario.ScopeConfig(sc.GateConfig, sc.Name)
	if err := cfg.Validate(); err != nil {
		return 2, err
	}
	t := &tracker{out: stdout, cfg: &cfg, init: sc.Init, pool: sc.Name, nodes: map[string]*nodeSteps{}}
	watching := make(chan struct{})
	hooks := &sim.Hooks{Started: func(ctx context.Context, l sim.Live) {
		t.start = time.Now()
		go t.watch(ctx, l, dyn, sc.Name, watching)
	}}
	runner, err := sim.NewRunner(rc, sim.Options{Gate: d.gate, Plane: d.plane, Hooks: hooks})
	if err != nil {
		return 1, err
	}
	res, err := runner.Run(ctx, sc)
	if err != nil {
		return 1, err
	}
	<-watching
	rep := &report.Report{Backend: d.plane.Name(), Gate: string(d.gate), Seed: 1, Scenarios: []*report.Result{res}}
	if err := rep.WriteHTML(*htmlOut); err != nil {
		return 1, fmt.Errorf("writing %s: %w", *htmlOut, err)
	}
	fmt.Fprintf(stdout, "timeline: %s\n", *htmlOut)
	for _, f := range res.Failures {
		fmt.Fprintln(stdout, "FAILED:", f)
	}
	for _, n := range res.Notes {
		if strings.HasPrefix(n, "NodeClaims created:") {
			fmt.Fprintln(stdout, n)
		}
	}
	if !res.Passed {
		return 1, errors.New("the demo's run did not meet its expect")
	}
	return 0, nil
}

// tracker prints a line each time a NodeClaim or node of the demo takes a step: created,
// tainted, init ready, released, first workload Pod Running.
type tracker struct {
	out   io.Writer
	cfg   *config.Config
	init  []scenario.InitDaemonSet
	pool  string // the scenario's node label value: its nodes, not a system node
	start time.Time

	mu    sync.Mutex
	nodes map[string]*nodeSteps
}

// nodeSteps are the steps a node has taken, each printed once.
type nodeSteps struct {
	created, released, initReady, running bool
}

// watch prints the steps until ctx ends, then closes done.
func (t *tracker) watch(ctx context.Context, l sim.Live, dyn dynamic.Interface, pool string, done chan<- struct{}) {
	defer close(done)
	f := informers.NewSharedInformerFactoryWithOptions(l.Client(), 0)
	nodes, pods := f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer()
	_, _ = nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { t.node(o.(*corev1.Node)) }, UpdateFunc: func(_, o any) { t.node(o.(*corev1.Node)) }})
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { t.pod(o.(*corev1.Pod), l.Namespace()) }, UpdateFunc: func(_, o any) { t.pod(o.(*corev1.Pod), l.Namespace()) }})
	f.Start(ctx.Done())
	// The hook runs before the run installs Karpenter's CRDs: until it has, there is
	// nothing to watch.
	var claims *autoscaler.Claims
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		claims, err = autoscaler.WatchClaims(ctx, dyn, pool)
		return err == nil, nil
	})
	if err != nil {
		f.Shutdown()
		return
	}
	printed := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		all := claims.All()
		for _, c := range all[printed:] {
			t.line(c.Name, "NodeClaim created (%d so far)", printed+1)
			printed++
		}
		select {
		case <-ctx.Done():
			f.Shutdown()
			claims.Wait()
			return
		case <-tick.C:
		}
	}
}

func (t *tracker) line(name, format string, args ...any) {
	fmt.Fprintf(t.out, "%7.1fs  %-62s %s\n", time.Since(t.start).Seconds(), name, fmt.Sprintf(format, args...))
}

// node prints a node's creation (with or without the gate's taint) and its release.
func (t *tracker) node(n *corev1.Node) {
	if n.Labels[scenario.Label] != t.pool {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.nodes[n.Name]
	if !ok {
		s = &nodeSteps{}
		t.nodes[n.Name] = s
	}
	for _, line := range nodeLines(s, n, t.cfg) {
		t.line(n.Name, "%s", line)
	}
}

// nodeLines are the steps this version of the node shows for the first time.
func nodeLines(s *nodeSteps, n *corev1.Node, cfg *config.Config) []string {
	var out []string
	if !s.created {
		s.created = true
		if cfg.HasTaint(n) {
			out = append(out, "node created, tainted "+cfg.TaintList())
		} else {
			out = append(out, "node created, NOT tainted")
		}
	}
	if !s.released && cfg.Released(n) && !cfg.HasTaint(n) {
		s.released = true
		out = append(out, fmt.Sprintf("released after %.1fs", time.Since(n.CreationTimestamp.Time).Seconds()))
	}
	return out
}

// pod prints a node's init Pod turning Ready and its first workload Pod Running.
func (t *tracker) pod(p *corev1.Pod, ns string) {
	if p.Namespace != ns || p.Spec.NodeName == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.nodes[p.Spec.NodeName]
	if !ok {
		return
	}
	init := false
	for _, ds := range t.init {
		init = init || labels.SelectorFromSet(ds.Labels).Matches(labels.Set(p.Labels))
	}
	switch {
	case init && !s.initReady && podReady(p):
		s.initReady = true
		t.line(p.Spec.NodeName, "init Pod Ready")
	case !init && !s.running && p.Status.Phase == corev1.PodRunning:
		s.running = true
		t.line(p.Spec.NodeName, "first workload Pod Running (%s)", p.Name)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

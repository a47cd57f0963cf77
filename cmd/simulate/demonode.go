package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/node"
)

// The demo's gate runs either in the simulator's process or, when it is given the image
// and the machine can run a real node, from its Helm chart on a real system node, as users
// run it: helm install, the image imported into the node's containerd (never pulled), the
// webhook served from the gate's Pods through the chart's Service.

const (
	// systemPoolLabel marks the system node the chart's nodeSelector is set to, as the
	// system the project grew from deploys it.
	systemPoolLabel = "kubernetes.azure.com/mode"
	// demoNodeIndex is the demo's real node's index (sim/node.Config), one no test uses
	// (docs/development.md lists them), so the demo can run beside make test.
	demoNodeIndex = 30
	// The chart's release, its namespace, and so its Deployment's name.
	demoRelease   = "startupgate"
	demoNamespace = "startupgate-system"
)

// chartOpts are the flags of the demo's chart path.
type chartOpts struct {
	image, imageRef, helm, chart, planeLogs string
}

// demoPlane is the demo's running plane and how its gate runs.
type demoPlane struct {
	plane *controlplane.Embedded
	rc    *rest.Config
	gate  gateundertest.Mode
	stop  func() error
}

// chartOnNode says whether the demo runs the gate from its chart on a real node: given an
// image, on a machine that supports one (unsupported is node.Unsupported()'s reason). If not,
// why, for the console.
func chartOnNode(image, unsupported string) (bool, string) {
	switch {
	case image == "":
		return false, "the gate runs in the simulator's process (as root, make demo runs it from its chart on a real node)"
	case unsupported != "":
		return false, "this machine cannot run a real node (" + unsupported + "): the gate runs in the simulator's process"
	}
	return true, ""
}

// startDemoPlane starts the plane, and for the chart path the real system node and the
// gate's release, saying on out what it does.
func startDemoPlane(ctx context.Context, out io.Writer, o chartOpts) (*demoPlane, error) {
	onNode, why := chartOnNode(o.image, node.Unsupported())
	if !onNode {
		fmt.Fprintln(out, why)
		return startInProcessPlane(ctx, out, o.planeLogs)
	}
	return startChartPlane(ctx, out, o)
}

func startInProcessPlane(ctx context.Context, out io.Writer, planeLogs string) (*demoPlane, error) {
	backend, err := newBackend("embedded", "", planeLogs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "starting the embedded control plane")
	rc, err := backend.Start(ctx)
	if err != nil {
		return nil, errors.Join(err, backend.Stop())
	}
	plane := backend.(*controlplane.Embedded)
	fmt.Fprintf(out, "control plane up in %.1fs; starting Karpenter and the gate\n", plane.StartDuration().Seconds())
	return &demoPlane{plane: plane, rc: rc, gate: gateundertest.InProcess, stop: backend.Stop}, nil
}

func startChartPlane(ctx context.Context, out io.Writer, o chartOpts) (*demoPlane, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	dir, removeDir, err := nodesDir(o.planeLogs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "starting the embedded control plane, kube-proxy (after any other run's on this machine) and a real system node (%s=system) with the gate's image %s\n", systemPoolLabel, o.imageRef)
	cl, err := node.StartCluster(ctx, node.ClusterConfig{
		Dir: dir, PlaneLogs: o.planeLogs, Image: o.image,
		System: node.Config{Name: "system-0", Index: demoNodeIndex, Labels: map[string]string{systemPoolLabel: "system"}},
	})
	if err != nil {
		return nil, errors.Join(err, removeDir())
	}
	d := &demoPlane{plane: cl.Plane, rc: cl.Config, gate: gateundertest.Installed, stop: func() error { return errors.Join(cl.Stop(), removeDir()) }}
	fmt.Fprintf(out, "control plane up in %.1fs, node %s Ready; helm install %s %s\n", cl.Plane.StartDuration().Seconds(), cl.System.Name(), demoRelease, o.chart)
	began := time.Now()
	if err := helmInstall(ctx, o, cl.Plane.Kubeconfig()); err != nil {
		return nil, errors.Join(err, d.stop())
	}
	if err := waitServing(ctx, cl.Client); err != nil {
		return nil, errors.Join(err, d.stop())
	}
	fmt.Fprintf(out, "the gate serves from its chart's Pods on %s, %.1fs after helm install (their logs: %s); starting Karpenter\n",
		cl.System.Name(), time.Since(began).Seconds(), filepath.Join(cl.System.Dir(), "pod-logs"))
	return d, nil
}

// check fails before anything starts when a part of the chart path is missing.
func (o chartOpts) check() error {
	if _, err := exec.LookPath(o.helm); err != nil {
		return fmt.Errorf("--helm: %w (make helm builds it)", err)
	}
	for flag, path := range map[string]string{"--image": o.image, "--chart": o.chart} {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	if _, _, err := splitImageRef(o.imageRef); err != nil {
		return err
	}
	_, err := node.PartsDir()
	return err
}

// nodesDir is where the real node keeps its state and its Pods' logs: beside the plane's
// logs when they are kept, so the gate's logs are kept too, else a temporary directory,
// which remove removes.
func nodesDir(planeLogs string) (dir string, remove func() error, err error) {
	if planeLogs == "" {
		dir, err = os.MkdirTemp("", "startupgate-demo-nodes-")
		return dir, func() error { return os.RemoveAll(dir) }, err
	}
	dir = filepath.Join(planeLogs, "nodes")
	return dir, func() error { return nil }, os.MkdirAll(dir, 0o755)
}

// helmInstall runs helm install of the chart, set only to run the imported image, never
// pulled, on the system pool: everything else is the chart's default.
func helmInstall(ctx context.Context, o chartOpts, kubeconfig string) error {
	repo, tag, err := splitImageRef(o.imageRef)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.helm, "install", demoRelease, o.chart,
		"--kubeconfig", kubeconfig, "--namespace", demoNamespace, "--create-namespace",
		// --set-string: --set would make a tag of digits a number, which the chart's schema refuses.
		"--set-string", "image.repository="+repo, "--set-string", "image.tag="+tag, "--set", "image.pullPolicy=Never",
		"--set-string", "nodeSelector."+strings.ReplaceAll(systemPoolLabel, ".", `\.`)+"=system")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm install: %w: %s", err, out)
	}
	return nil
}

// splitImageRef splits name:tag at the tag's colon (a registry's port has one before the
// last slash). A digest is refused: the chart's image is a repository and a tag.
func splitImageRef(ref string) (repo, tag string, err error) {
	i := strings.LastIndex(ref, ":")
	if i <= strings.LastIndex(ref, "/") || i == len(ref)-1 || i == 0 || strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("--image-ref %q: want name:tag", ref)
	}
	return ref[:i], ref[i+1:], nil
}

// waitServing waits for the release's Pods to be ready, then for its webhook to taint a
// dry-run Node CREATE through the chart's Service.
func waitServing(ctx context.Context, cs kubernetes.Interface) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(demoNamespace).Get(ctx, demoRelease, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		return d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("the gate's Deployment %s/%s was not ready within 3 minutes: %w", demoNamespace, demoRelease, err)
	}
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := gateundertest.WaitAdmission(ctx, cs, &cfg, "demo"); err != nil {
		return fmt.Errorf("the gate's webhook did not taint a Node CREATE through its Service: %w", err)
	}
	return nil
}

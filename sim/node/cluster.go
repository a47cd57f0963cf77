package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/sim/controlplane"
)

// ClusterConfig says what StartCluster builds.
type ClusterConfig struct {
	// Dir holds kube-proxy's and the system node's state.
	Dir string
	// PlaneLogs keeps the plane's logs there ("" for a temporary directory).
	PlaneLogs string
	// System is the system node: its name, index and labels (Dir and Kubeconfig are filled).
	System Config
	// Image is an image tarball imported into the system node's containerd before
	// StartCluster returns, so that a Pod of it never pulls ("" for none).
	Image string
}

// Cluster is what the gate's image needs to run as users run it: the embedded plane
// serving real Pods (its apiserver on HostIP, so that Pods reach it and it reaches their
// webhook), kube-proxy for ClusterIPs, and a real system node that holds the image.
type Cluster struct {
	Plane  *controlplane.Embedded
	Config *rest.Config
	Client kubernetes.Interface
	Proxy  *Proxy
	System *Node
	// cgroup is the plane's CPU cgroup (planeCgroup), "" until made.
	cgroup string
}

// StartCluster starts the plane, kube-proxy and the system node, imports the image, and
// returns once the system node is Ready and kube-proxy routes the apiserver's Service. As
// kube-proxy runs one at a time on a machine, it waits for another run's until ctx ends.
// On an error it stops what it started.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	ip, err := HostIP()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Plane: &controlplane.Embedded{PodIP: ip, LogDir: cfg.PlaneLogs}}
	if c.cgroup, c.Plane.CgroupProcs, err = planeCgroup(); err != nil {
		return nil, err
	}
	if err := c.start(ctx, cfg); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, cfg ClusterConfig) error {
	var err error
	if c.Config, err = c.Plane.Start(ctx); err != nil {
		return err
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if c.Proxy, err = StartProxy(ctx, cfg.Dir, c.Plane.Kubeconfig()); err != nil {
		return err
	}
	sys := cfg.System
	sys.Dir, sys.Kubeconfig = cfg.Dir, c.Plane.Kubeconfig()
	if c.System, err = Start(ctx, sys); err != nil {
		return err
	}
	if cfg.Image != "" {
		if err := c.System.ImportImage(ctx, cfg.Image); err != nil {
			return err
		}
	}
	if _, err := c.System.Wait(ctx, c.Client, Ready); err != nil {
		return fmt.Errorf("the system node is not Ready: %w", err)
	}
	return c.Proxy.WaitService(ctx, "default/kubernetes")
}

// Stop stops the system node, kube-proxy and the plane, in that order, each that started,
// and removes the plane's cgroup.
func (c *Cluster) Stop() error {
	var errs []error
	if c.System != nil {
		errs = append(errs, c.System.Stop())
	}
	if c.Proxy != nil {
		errs = append(errs, c.Proxy.Stop())
	}
	errs = append(errs, c.Plane.Stop())
	if c.cgroup != "" {
		errs = append(errs, killCgroup(c.cgroup), removeCgroup(c.cgroup))
	}
	return errors.Join(errs...)
}

// PlaneProcesses are the names of the processes in the plane's cgroup, as /proc gives them.
func (c *Cluster) PlaneProcesses() ([]string, error) {
	dir, err := cpuHierarchy()
	if err != nil || c.cgroup == "" {
		return nil, err
	}
	var names []string
	for _, pid := range pidsIn(filepath.Join(dir, c.cgroup, "cgroup.procs")) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue // gone meanwhile
		}
		names = append(names, strings.TrimSpace(string(comm)))
	}
	return names, nil
}

// planeCgroups counts the cgroups planeCgroup has made in this process, to name them.
var planeCgroups atomic.Int32

// planeCgroup makes a CPU cgroup for a cluster's plane, named after this process, and
// returns its name and its cgroup.procs file. Made at the top of the hierarchy, beside the
// nodes' cgroup roots and the machine's sessions (each of which the kernel's autogroups
// weigh as one), it gets a CPU share of its own, as a real cluster's control plane has
// machines of its own. Without it, under make test's other
// planes, the plane's apiserver took over 5 s to answer the gate's Lease requests and its
// leader lost the lease in the middle of a burst.
func planeCgroup() (name, procs string, err error) {
	dir, err := cpuHierarchy()
	if err != nil {
		return "", "", err
	}
	name = fmt.Sprintf("/startupgate-plane-%d-%d", os.Getpid(), planeCgroups.Add(1))
	if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
		return "", "", fmt.Errorf("creating the plane's cgroup: %w", err)
	}
	return name, filepath.Join(dir, name, "cgroup.procs"), nil
}

// cpuHierarchy is the directory of the CPU controller's cgroups: the unified hierarchy on
// cgroup v2, else v1's cpu hierarchy.
func cpuHierarchy() (string, error) {
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return cgroupMount, nil
	}
	dir := filepath.Join(cgroupMount, "cpu")
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		return "", fmt.Errorf("no cgroup v1 cpu hierarchy: %w", err)
	}
	return dir, nil
}

// Ready reports whether the Node reports itself Ready.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/startupgate/startupgate/internal/freeport"
)

// ClusterCIDR holds every real node's Pod subnet (10.244.Index.0/24): kube-proxy tells a
// Pod's traffic from the host's by it.
const ClusterCIDR = "10.244.0.0/16"

// proxyEntry is the registry's record of the running kube-proxy, by its directory, and
// proxyLock the lock its owner holds while it runs (the kernel lets go when the owner dies).
var (
	proxyEntry = filepath.Join(registry, "kube-proxy")
	proxyLock  = filepath.Join(registry, "kube-proxy.lock")
)

// Proxy is kube-proxy, which makes Services' ClusterIPs work on this machine: a Pod on a
// real node reaches the apiserver through the kubernetes Service, and the apiserver the
// gate's webhook through its Service. Every real node shares this machine's network
// namespace, and so its iptables rules: one kube-proxy serves them all, and a second
// waits for the first to stop.
type Proxy struct {
	dir   string
	parts string
	proc  *proc
	log   *os.File
	lock  *os.File
}

// StartProxy starts kube-proxy (iptables mode) against the plane of kubeconfig, its state
// and log in dir, once no other runs on this machine (it waits until ctx ends for that).
// It returns once the process runs; rules follow within its sync period.
func StartProxy(ctx context.Context, dir, kubeconfig string) (*Proxy, error) {
	parts, err := PartsDir()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	p := &Proxy{dir: filepath.Join(dir, "kube-proxy"), parts: parts}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	if p.lock, err = lockProxy(ctx); err != nil {
		return nil, err
	}
	if err := p.start(kubeconfig); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

// start claims the machine's kube-proxy record and runs kube-proxy; the caller holds the
// lock, and stops p if start fails, which lets the lock go and removes what was made.
func (p *Proxy) start(kubeconfig string) error {
	if err := claimProxy(p.dir); err != nil {
		return err
	}
	healthz, err := freeport.Get()
	if err != nil {
		return err
	}
	metrics, err := freeport.Get()
	if err != nil {
		return err
	}
	cfg := filepath.Join(p.dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(proxyConfig(kubeconfig, healthz, metrics)), 0o644); err != nil {
		return err
	}
	p.proc, p.log, err = spawn(p.dir, "kube-proxy", filepath.Join(p.parts, "kube-proxy"), p.parts, "--config", cfg, "--v", "2")
	return err
}

// proxyConfig is kube-proxy's configuration. It leaves the machine's sysctls alone: no
// conntrack table sizing or timeouts, and no NodePorts on localhost (which would turn
// route_localnet on); nothing here needs them.
func proxyConfig(kubeconfig string, healthz, metrics int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %q
clusterCIDR: %q
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  syncPeriod: 1s
  minSyncPeriod: 0s
`, kubeconfig, ClusterCIDR, healthz, metrics)
}

// WaitService waits, up to a minute, until kube-proxy routes the Service's ClusterIP:
// its iptables rule names the Service in a comment, "namespace/name:portname cluster IP"
// ("namespace/name cluster IP" for an unnamed port), and exists once the Service has
// endpoints. A Pod that dials the ClusterIP before then gets no answer until its dial times
// out.
func (p *Proxy) WaitService(ctx context.Context, namespacedName string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES").Output()
		return err == nil && (bytes.Contains(out, []byte(`"`+namespacedName+":")) ||
			bytes.Contains(out, []byte(`"`+namespacedName+` cluster IP"`))), nil
	})
	if err != nil {
		return fmt.Errorf("kube-proxy routed no ClusterIP of Service %s (its log: %s): %w", namespacedName, filepath.Join(p.dir, "kube-proxy.log"), err)
	}
	return nil
}

// Exited returns nil while kube-proxy runs, and otherwise how it exited and where its log is.
func (p *Proxy) Exited() error {
	if p.proc == nil {
		return errors.New("kube-proxy was stopped")
	}
	return p.proc.exited(p.dir)
}

// Stop stops kube-proxy and removes its iptables rules (kube-proxy --cleanup). It may be
// called again: once its lock is let go, the rules and the record may be another run's, so
// it does nothing.
func (p *Proxy) Stop() error {
	if p.proc != nil {
		stop(p.proc, 10*time.Second)
		p.proc = nil
	}
	if p.lock == nil {
		return nil
	}
	err := cleanupProxy(p.parts)
	if p.log != nil {
		_ = p.log.Close()
		p.log = nil
	}
	if err == nil {
		if rerr := os.Remove(proxyEntry); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	if p.lock != nil {
		_ = p.lock.Close() // lets go of the lock
		p.lock = nil
	}
	if err != nil {
		return err
	}
	return removeKubeletChains()
}

// lockProxy takes the machine's kube-proxy lock, waiting while another holds it.
func lockProxy(ctx context.Context) (*os.File, error) {
	if err := os.MkdirAll(registry, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(proxyLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", proxyLock, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("another kube-proxy runs on this machine (%s is locked): %w", proxyLock, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// claimProxy records dir as the running kube-proxy's; the caller holds the lock. A record
// left from before is a killed run's, and its rules are removed first.
func claimProxy(dir string) error {
	if _, err := os.Stat(proxyEntry); err == nil {
		if err := sweepProxy(); err != nil {
			return err
		}
	}
	return os.WriteFile(proxyEntry, []byte(dir), 0o644)
}

// sweepDeadProxy removes the rules of a kube-proxy whose owner died, unless another holds
// the lock now.
func sweepDeadProxy() error {
	if _, err := os.Stat(proxyEntry); err != nil {
		return nil // no record: nothing to sweep
	}
	lock, err := lockProxy(expired())
	if err != nil {
		return nil // a live kube-proxy holds it
	}
	defer lock.Close()
	return sweepProxy()
}

// expired is a context that is already done: lockProxy then tries once.
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// sweepProxy removes a dead kube-proxy's rules and its record.
func sweepProxy() error {
	parts, err := PartsDir()
	if err != nil {
		return err
	}
	if err := cleanupProxy(parts); err != nil {
		return err
	}
	return os.Remove(proxyEntry)
}

// cleanupProxy removes the chains and rules kube-proxy made.
func cleanupProxy(parts string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(parts, "kube-proxy"), "--cleanup", "--v", "0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %w: %s", err, out)
	}
	return nil
}

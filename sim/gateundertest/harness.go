package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate"
)

// harness runs the gate under test for one scenario and is where gate-side faults act.
//
//	apiserver --webhook--> whProxy --> replica webhook servers (in-process or cmd/gate)
//	replicas  --API------> apiProxy --> apiserver
//
// Both proxies pass traffic untouched until a fault step tells them otherwise: whProxy can
// refuse, hang or delay admission calls; apiProxy can cut every connection (watch drops).
type harness struct {
	off      bool // no gate at all
	policy   bool // admission by MutatingAdmissionPolicy instead of the webhook
	process  bool // replicas are cmd/gate child processes
	floor    bool // the floor controller instead of the gate
	reactive bool // no admission at all: the controller alone, tainting by backfill
	cfg      gate.Config
	scenario string
	ns       string
	rc       *rest.Config // admin, direct
	as       *rest.ImpersonationConfig
	cs       kubernetes.Interface
	webhook  WebhookSettings
	// shipped runs process replicas with the shipped client limits (the benchmark measures
	// the gate as deployed) and with the profiler on; the suite raises the limits instead.
	shipped bool

	whProxy  *proxy
	apiProxy *proxy
	dir      string // certs, kubeconfig, config, logs
	ca       []byte
	replicas []*replica
	cleanups []func(context.Context) error
}

// replica is one gate instance.
type replica struct {
	id          int
	port        int
	metricsPort int
	pprofPort   int
	// in-process
	cancel context.CancelFunc
	done   chan error
	// child process
	cmd *exec.Cmd
}

func newHarness(rc *rest.Config, cs kubernetes.Interface, mode GateMode, cfg gate.Config, sc *Scenario, ns string) *harness {
	return &harness{
		off: mode == GateOff, floor: mode == GateFloor, process: sc.GateProcess != nil && mode != GateFloor,
		policy: mode == GatePolicy || mode == GateFloor || sc.Admission == "policy", reactive: sc.Admission == "none",
		cfg: cfg, scenario: sc.Name, ns: ns, rc: rc, cs: cs, webhook: sc.Webhook,
	}
}

// start installs admission (webhook or policy), starts the replicas and returns once a
// dry-run CREATE shows admission tainting a probe node.
func (h *harness) start(ctx context.Context, replicas int) error {
	if h.off {
		return nil
	}
	var err error
	if h.dir, err = os.MkdirTemp("", "startupgate-gate-"); err != nil {
		return err
	}
	u, err := url.Parse(h.rc.Host)
	if err != nil || u.Host == "" {
		return fmt.Errorf("apiserver address %q: %v", h.rc.Host, err)
	}
	if h.apiProxy, err = newProxy(u.Host); err != nil {
		return err
	}
	h.cfg.Webhook = !h.policy && !h.reactive
	if h.cfg.Webhook || h.cfg.PodGuard {
		if h.ca, err = writeServingCert(h.dir); err != nil {
			return err
		}
		if h.whProxy, err = newProxy(); err != nil {
			return err
		}
	}
	if replicas < 1 {
		replicas = 1
	}
	var backends []string
	for i := 0; i < replicas; i++ {
		r := &replica{id: i}
		if r.port, err = freePort(); err != nil {
			return err
		}
		if r.metricsPort, err = freePort(); err != nil {
			return err
		}
		if r.pprofPort, err = freePort(); err != nil {
			return err
		}
		h.replicas = append(h.replicas, r)
		backends = append(backends, fmt.Sprintf("127.0.0.1:%d", r.port))
	}
	if h.whProxy != nil {
		h.whProxy.setBackends(backends...)
	}
	for _, r := range h.replicas {
		if err := h.run(ctx, r); err != nil {
			return err
		}
	}
	if err := h.installAdmission(ctx); err != nil {
		return err
	}
	if h.reactive {
		return nil
	}
	return waitAdmission(ctx, h.cs, &h.cfg, h.scenario)
}

// gateRC is the replicas' client config: through apiProxy, with high limits so that the
// client is never the bottleneck. The benchmark (shipped) connects directly: it injects no
// faults, and a relay hop would be charged to the gate.
func (h *harness) gateRC() *rest.Config {
	rc := rest.CopyConfig(h.rc)
	if !h.shipped {
		u, _ := url.Parse(rc.Host)
		u.Host = h.apiProxy.addr()
		rc.Host = u.String()
	}
	rc.QPS, rc.Burst = 1000, 2000
	rc.UserAgent = "startupgate-gate"
	if h.as != nil {
		rc.Impersonate = *h.as
	}
	return rc
}

// run starts one replica: in-process through gate.NewManager, or as the built cmd/gate.
func (h *harness) run(ctx context.Context, r *replica) error {
	if h.floor {
		return h.runFloorProcess(r)
	}
	if h.process {
		return h.runProcess(r)
	}
	mgr, err := gate.NewManager(h.gateRC(), ptr.To(h.cfg), gate.ManagerOptions{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: r.port, CertDir: h.dir}),
		// Every scenario starts a fresh gate in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}, gate.Options{})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- mgr.Start(rctx) }()
	return nil
}

func (h *harness) runProcess(r *replica) error {
	bin, err := GateBinary()
	if err != nil {
		return err
	}
	kc, cfgFile, err := h.writeGateFiles()
	if err != nil {
		return err
	}
	args := []string{"--config", cfgFile,
		fmt.Sprintf("--webhook-port=%d", r.port), "--cert-dir", h.dir,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", r.metricsPort), "--health-probe-bind-address=0",
		"--leader-elect=true", "--leader-election-namespace=" + h.ns}
	if h.shipped {
		// The gate as deployed: shipped leases and client limits, plus the profiler.
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", r.pprofPort))
	} else {
		// Short leases so a failover fits in a scenario (the defaults are 15s/10s/2s), and
		// limits high enough that the client is never what a scenario measures.
		args = append(args, "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			"--kube-api-qps=1000", "--kube-api-burst=2000")
	}
	return h.startChild(r, exec.Command(bin, args...), "KUBECONFIG="+kc)
}

// runFloorProcess starts the floor controller as a child process: this very binary,
// re-executed with floorChildEnv set (RunFloorChild takes over there). The floor then has a
// process of its own, as the gate has, and does not compete with the simulator's own work.
func (h *harness) runFloorProcess(r *replica) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	kc, cfgFile, err := h.writeGateFiles()
	if err != nil {
		return err
	}
	return h.startChild(r, exec.Command(self), floorChildEnv+"="+strings.Join([]string{kc, cfgFile, h.scenario, h.ns}, ","))
}

// writeGateFiles writes the replicas' kubeconfig and gate Config into the harness dir.
func (h *harness) writeGateFiles() (kubeconfig, config string, err error) {
	kubeconfig, config = filepath.Join(h.dir, "kubeconfig"), filepath.Join(h.dir, "config.yaml")
	if err := writeKubeconfig(h.gateRC(), kubeconfig); err != nil {
		return "", "", err
	}
	raw, err := yaml.Marshal(h.cfg)
	if err != nil {
		return "", "", err
	}
	return kubeconfig, config, os.WriteFile(config, raw, 0o600)
}

// startChild starts cmd as replica r, logging to the harness dir; it dies with us.
func (h *harness) startChild(r *replica, cmd *exec.Cmd, env ...string) error {
	logf, err := os.OpenFile(filepath.Join(h.dir, fmt.Sprintf("gate-%d.log", r.id)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", filepath.Base(cmd.Path), err)
	}
	r.cmd = cmd
	r.done = make(chan error, 1)
	go func() { r.done <- cmd.Wait(); logf.Close() }()
	return nil
}

// kill stops a replica abruptly: SIGKILL for a process (no lease release, no cleanup — the
// crash the gate must survive), context cancel for in-process.
func (h *harness) kill(r *replica) {
	switch {
	case r.cmd != nil:
		_ = r.cmd.Process.Kill()
		<-r.done
		r.cmd = nil
	case r.cancel != nil:
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// leader is the replica whose metrics say it holds the lease, or nil.
func (h *harness) leader(ctx context.Context) *replica {
	for _, r := range h.replicas {
		if r.cmd == nil {
			continue
		}
		if isLeader(ctx, r.metricsPort) {
			return r
		}
	}
	return nil
}

func isLeader(ctx context.Context, port int) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
			return true
		}
	}
	return false
}

// installAdmission registers the shipped webhook configuration(s), pointed at whProxy, or
// the admission policy.
func (h *harness) installAdmission(ctx context.Context) error {
	api := h.cs.AdmissionregistrationV1()
	name := "startupgate-" + h.scenario
	if h.cfg.Webhook {
		addr := h.whProxy.addr()
		if h.shipped {
			addr = fmt.Sprintf("127.0.0.1:%d", h.replicas[0].port) // no relay hop in admission latency
		}
		wh, err := webhookConfig(&h.cfg, h.scenario, "https://"+addr+gate.NodeWebhookPath, h.ca)
		if err != nil {
			return err
		}
		if fp := h.webhook.FailurePolicy; fp != "" {
			wh.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType(fp))
		}
		if ts := h.webhook.TimeoutSeconds; ts > 0 {
			wh.Webhooks[0].TimeoutSeconds = ptr.To(ts)
		}
		_ = api.MutatingWebhookConfigurations().Delete(ctx, wh.Name, metav1.DeleteOptions{})
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("installing webhook configuration: %w", err)
		}
		h.cleanups = append(h.cleanups, func(ctx context.Context) error {
			return ignoreNotFound(api.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}))
		})
	} else if !h.reactive {
		policy, binding, err := h.cfg.Policy()
		if err != nil {
			return err
		}
		policy.Name, binding.Name, binding.Spec.PolicyName = name, name, name
		_ = api.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = api.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("installing admission policy: %w", err)
		}
		if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("installing admission policy binding: %w", err)
		}
		h.cleanups = append(h.cleanups, func(ctx context.Context) error {
			return errors.Join(
				ignoreNotFound(api.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})),
				ignoreNotFound(api.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})))
		})
	}
	if h.cfg.PodGuard {
		vw, err := podGuardConfig(h.scenario, "https://"+h.whProxy.addr()+gate.PodGuardPath, h.ca)
		if err != nil {
			return err
		}
		_ = api.ValidatingWebhookConfigurations().Delete(ctx, vw.Name, metav1.DeleteOptions{})
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, vw, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("installing pod guard: %w", err)
		}
		h.cleanups = append(h.cleanups, func(ctx context.Context) error {
			return ignoreNotFound(api.ValidatingWebhookConfigurations().Delete(ctx, vw.Name, metav1.DeleteOptions{}))
		})
	}
	return nil
}

// stop removes admission first (so the apiserver stops calling the gate), then stops the
// replicas and the proxies, then removes the files.
func (h *harness) stop(ctx context.Context) error {
	var errs []error
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, h.cleanups[i](ctx))
	}
	h.cleanups = nil
	for _, r := range h.replicas {
		if r.cancel != nil {
			r.cancel()
			if err := <-r.done; err != nil {
				errs = append(errs, fmt.Errorf("gate replica %d: %w", r.id, err))
			}
			r.cancel = nil
		}
		if r.cmd != nil {
			h.kill(r)
		}
	}
	for _, p := range []*proxy{h.whProxy, h.apiProxy} {
		if p != nil {
			p.close(ctx)
		}
	}
	if h.dir != "" {
		errs = append(errs, os.RemoveAll(h.dir))
	}
	return errors.Join(errs...)
}

// podGuardConfig loads the shipped pod guard ValidatingWebhookConfiguration and scopes it to
// the scenario's namespace.
func podGuardConfig(scenario, url string, ca []byte) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	vw := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := loadManifest("overlays/pod-guard/pod-guard.yaml", vw); err != nil {
		return nil, err
	}
	if len(vw.Webhooks) != 1 {
		return nil, fmt.Errorf("pod-guard.yaml: want one webhook, found %d", len(vw.Webhooks))
	}
	vw.Name = "startupgate-pod-guard-" + scenario
	w := &vw.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{ScenarioLabel: scenario}}
	return vw, nil
}

// writeKubeconfig writes rc as a kubeconfig file for a child process.
func writeKubeconfig(rc *rest.Config, path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sim"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData,
		CertificateAuthority: rc.CAFile, InsecureSkipTLSVerify: rc.Insecure, TLSServerName: rc.ServerName}
	cfg.AuthInfos["sim"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData,
		ClientCertificate: rc.CertFile, ClientKey: rc.KeyFile, Token: rc.BearerToken, TokenFile: rc.BearerTokenFile,
		Username: rc.Username, Password: rc.Password,
		Impersonate: rc.Impersonate.UserName, ImpersonateGroups: rc.Impersonate.Groups}
	cfg.Contexts["sim"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "sim"}
	cfg.CurrentContext = "sim"
	return clientcmd.WriteToFile(*cfg, path)
}

var (
	gateBinOnce sync.Once
	gateBin     string
	gateBinErr  error
)

// GateBinary is the cmd/gate binary for process-mode scenarios: $STARTUPGATE_GATE_BINARY
// if set (the Makefile passes bin/gate), else built once per process from this module.
func GateBinary() (string, error) {
	gateBinOnce.Do(func() {
		if p := os.Getenv("STARTUPGATE_GATE_BINARY"); p != "" {
			gateBin = p
			return
		}
		dir, err := os.MkdirTemp("", "startupgate-bin-")
		if err != nil {
			gateBinErr = err
			return
		}
		gateBin = filepath.Join(dir, "gate")
		out, err := exec.Command("go", "build", "-o", gateBin, "github.com/startupgate/startupgate/cmd/gate").CombinedOutput()
		if err != nil {
			gateBinErr = fmt.Errorf("building cmd/gate: %v: %s", err, out)
		}
	})
	return gateBin, gateBinErr
}

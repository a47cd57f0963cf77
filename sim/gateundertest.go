package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/gate"
)

// GateMode is how the gate under test runs.
type GateMode string

const (
	// GateInProcess runs gate.NewManager — the same wiring as cmd/gate — in this process,
	// with its webhook on a real TLS port registered from deploy/base/webhook.yaml.
	GateInProcess GateMode = "in-process"
	// GatePolicy installs the MutatingAdmissionPolicy form and runs the controller in-process.
	GatePolicy GateMode = "policy"
	// GateOff runs no gate at all: the negative control.
	GateOff GateMode = "off"
)

// ParseGateMode validates a --gate value.
func ParseGateMode(s string) (GateMode, error) {
	switch m := GateMode(s); m {
	case GateInProcess, GatePolicy, GateOff:
		return m, nil
	}
	return "", fmt.Errorf("--gate %q: want in-process, policy or off", s)
}

// runningGate is a started gate and how to take it down.
type runningGate struct {
	cancel context.CancelFunc
	done   chan error
	// cleanups undo API changes (before the gate stops, so the apiserver stops calling it);
	// dirs are removed after it stopped (its cert watcher reads them until then).
	cleanups []func(context.Context) error
	dirs     []string
}

// startGate brings up the gate for one scenario and returns once admission demonstrably
// taints a probe node (a dry-run CREATE), so the first join cannot race the gate's start.
func startGate(ctx context.Context, rc *rest.Config, cs kubernetes.Interface, mode GateMode, cfg gate.Config, scenario string) (*runningGate, error) {
	g := &runningGate{}
	if mode == GateOff {
		return g, nil
	}
	cfg.Webhook = mode == GateInProcess
	var (
		certDir string
		port    int
		err     error
	)
	if cfg.Webhook {
		if certDir, err = os.MkdirTemp("", "startupgate-certs-"); err != nil {
			return nil, err
		}
		g.dirs = append(g.dirs, certDir)
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	var ca []byte
	if cfg.Webhook {
		if ca, err = writeServingCert(certDir); err != nil {
			return nil, err
		}
	}
	gctx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	g.done = make(chan error, 1)
	mgr, err := gate.NewManager(rc, &cfg, gate.ManagerOptions{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		// Every scenario starts a fresh gate in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}, gate.Options{})
	if err != nil {
		cancel()
		g.cancel = nil
		return g, err
	}
	go func() { g.done <- mgr.Start(gctx) }()

	switch mode {
	case GateInProcess:
		wh, err := webhookConfig(&cfg, scenario, fmt.Sprintf("https://127.0.0.1:%d%s", port, gate.NodeWebhookPath), ca)
		if err != nil {
			return g, err
		}
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, wh.Name, metav1.DeleteOptions{})
		if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
			return g, fmt.Errorf("installing webhook configuration: %w", err)
		}
		g.cleanups = append(g.cleanups, func(ctx context.Context) error {
			return ignoreNotFound(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, wh.Name, metav1.DeleteOptions{}))
		})
	case GatePolicy:
		policy, binding, err := cfg.Policy()
		if err != nil {
			return g, err
		}
		policy.Name, binding.Name, binding.Spec.PolicyName = "startupgate-"+scenario, "startupgate-"+scenario, "startupgate-"+scenario
		api := cs.AdmissionregistrationV1()
		_ = api.MutatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = api.MutatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
		if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			return g, fmt.Errorf("installing admission policy: %w", err)
		}
		if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return g, fmt.Errorf("installing admission policy binding: %w", err)
		}
		g.cleanups = append(g.cleanups, func(ctx context.Context) error {
			return errors.Join(
				ignoreNotFound(api.MutatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})),
				ignoreNotFound(api.MutatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})))
		})
	}
	if err := waitAdmission(ctx, cs, &cfg, scenario); err != nil {
		return g, err
	}
	if !mgr.GetCache().WaitForCacheSync(gctx) {
		return g, fmt.Errorf("gate cache did not sync")
	}
	return g, nil
}

// stop takes the gate down and removes what startGate installed.
func (g *runningGate) stop(ctx context.Context) error {
	var errs []error
	for i := len(g.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, g.cleanups[i](ctx))
	}
	if g.cancel != nil {
		g.cancel()
		if err := <-g.done; err != nil {
			errs = append(errs, fmt.Errorf("gate manager: %w", err))
		}
		g.cancel = nil
	}
	for _, d := range g.dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	g.dirs = nil
	return errors.Join(errs...)
}

// webhookConfig loads the shipped MutatingWebhookConfiguration and points it at the
// in-process server. Only what differs in a test plane changes: the name (one per
// scenario), the client config (a URL instead of a Service), and the objectSelector, which
// takes the scenario's node selector so that concurrent scenarios never cross.
func webhookConfig(cfg *gate.Config, scenario, url string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	raw, err := deploy.FS.ReadFile("base/webhook.yaml")
	if err != nil {
		return nil, err
	}
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(raw, wh); err != nil {
		return nil, fmt.Errorf("decoding deploy/base/webhook.yaml: %w", err)
	}
	if len(wh.Webhooks) != 1 {
		return nil, fmt.Errorf("deploy/base/webhook.yaml: want one webhook, found %d", len(wh.Webhooks))
	}
	sel, err := cfg.ObjectSelector()
	if err != nil {
		return nil, err
	}
	wh.Name = "startupgate-" + scenario
	w := &wh.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	w.ObjectSelector = sel
	return wh, nil
}

// waitAdmission dry-run creates a probe node until admission adds the taint.
func waitAdmission(ctx context.Context, cs kubernetes.Interface, cfg *gate.Config, scenario string) error {
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   scenario + "-admission-probe",
		Labels: map[string]string{ScenarioLabel: scenario, corev1.LabelHostname: scenario + "-admission-probe"},
	}}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		out, err := cs.CoreV1().Nodes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && cfg.HasTaint(out) {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("gate admission not active after 30s (last error: %v)", last)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	caOnce sync.Once
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	caErr  error
)

// writeServingCert writes tls.crt/tls.key for 127.0.0.1, signed by a per-process CA, and
// returns the CA bundle the webhook configuration must trust. Real TLS, real verification.
func writeServingCert(dir string) ([]byte, error) {
	caOnce.Do(func() {
		if caKey, caErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); caErr != nil {
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "startupgate-sim-ca"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
		if err != nil {
			caErr = err
			return
		}
		caCert, caErr = x509.ParseCertificate(der)
		caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	})
	if caErr != nil {
		return nil, fmt.Errorf("creating CA: %w", caErr)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return caPEM, nil
}

package gateundertest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/sim/scenario"
)

// Mode is how the gate under test runs.
type Mode string

const (
	// InProcess runs setup.NewManager — the same wiring as cmd/gate — in this process,
	// with its webhook on a real TLS port registered from deploy/base/webhook.yaml.
	InProcess Mode = "in-process"
	// Policy installs the MutatingAdmissionPolicy form and runs the controller in-process.
	Policy Mode = "policy"
	// Off runs no gate at all: the negative control.
	Off Mode = "off"
	// Floor taints by the admission policy and releases with the trivial floor
	// controller instead of the gate: the plane's own floor, the benchmark's reference.
	Floor Mode = "floor"
)

// ParseMode validates a --gate value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case InProcess, Policy, Off, Floor:
		return m, nil
	}
	return "", fmt.Errorf("--gate %q: want in-process, policy, off or floor", s)
}

// webhookConfig loads the shipped MutatingWebhookConfiguration and points it at the
// in-process server. Only what differs in a test plane changes: the name (one per
// scenario), the client config (a URL instead of a Service), and the objectSelector, which
// takes the scenario's node selector so that concurrent scenarios never cross.
func webhookConfig(cfg *config.Config, name, url string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := loadManifest("base/webhook.yaml", wh); err != nil {
		return nil, err
	}
	if len(wh.Webhooks) != 1 {
		return nil, fmt.Errorf("deploy/base/webhook.yaml: want one webhook, found %d", len(wh.Webhooks))
	}
	sel, err := policy.ObjectSelector(cfg)
	if err != nil {
		return nil, err
	}
	wh.Name = "startupgate-" + name
	w := &wh.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	w.ObjectSelector = sel
	return wh, nil
}

// ShippedWebhookName is the name of the webhook in deploy/base/webhook.yaml: the
// apiserver's admission metrics label the gate's calls with it.
func ShippedWebhookName() (string, error) {
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := loadManifest("base/webhook.yaml", wh); err != nil {
		return "", err
	}
	if len(wh.Webhooks) == 0 {
		return "", fmt.Errorf("deploy/base/webhook.yaml holds no webhook")
	}
	return wh.Webhooks[0].Name, nil
}

// loadManifest strictly decodes one shipped manifest from deploy/.
func loadManifest(path string, obj any) error {
	raw, err := deploy.FS.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return fmt.Errorf("decoding deploy/%s: %w", path, err)
	}
	return nil
}

// waitAdmission dry-run creates, for every rule that taints at creation, a probe node its
// selector matches, until admission adds that rule's taint. Each rule has its own policy,
// and the apiserver activates policies one by one: one rule's taint says nothing of
// another's.
func waitAdmission(ctx context.Context, cs kubernetes.Interface, cfg *config.Config, name string) error {
	for _, r := range cfg.Admitting() {
		if err := waitRule(ctx, cs, r, name); err != nil {
			return err
		}
	}
	return nil
}

func waitRule(ctx context.Context, cs kubernetes.Interface, r *rule.Rule, name string) error {
	lbls, err := probeLabels(r.NodeSelector)
	if err != nil {
		return err
	}
	lbls[scenario.Label], lbls[corev1.LabelHostname] = name, name+"-admission-probe"
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-admission-probe", Labels: lbls}}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		out, err := cs.CoreV1().Nodes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && r.HasTaint(out) {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if last == nil {
		return fmt.Errorf("gate admission for rule %q not active after 30s (the probe was admitted without its taint)", r.Name)
	}
	return fmt.Errorf("gate admission for rule %q not active after 30s (last error: %w)", r.Name, last)
}

// probeLabels are labels that a node selector matches: the first value of each = and in,
// a value for each exists; a negative requirement is met by leaving the key out.
func probeLabels(selector string) (map[string]string, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	out := map[string]string{}
	for _, req := range reqs {
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			out[req.Key()] = req.Values().List()[0]
		case selection.Exists:
			out[req.Key()] = "true"
		}
	}
	return out, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

var (
	caOnce sync.Once
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	caErr  error
)

// WriteServingCert writes tls.crt/tls.key for 127.0.0.1, signed by a per-process CA, and
// returns the CA bundle the webhook configuration must trust. Real TLS, real verification.
func WriteServingCert(dir string) ([]byte, error) {
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

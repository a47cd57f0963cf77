// Package certs makes and keeps the certificate the gate's webhooks serve with, when the
// gate manages it itself (`--cert-secret`), as kyverno and Karpenter do. A certificate that
// a chart generates at render time comes out different on every `helm template`, so every
// GitOps sync would bring a new CA and break webhook calls until the Pods reload; here
// nothing in the manifests depends on a render:
//
//   - a CA lives in one Secret of the gate's namespace, made by whichever replica comes
//     first (the others read it back), and never overwritten;
//   - each replica mints its own serving certificate from that CA into its certificate
//     directory, and mints it again before it expires (the webhook server reloads it);
//   - every replica writes the CA into the caBundle of the gate's webhook configurations,
//     and writes it again whenever something (a sync of manifests that carry none) takes
//     it out.
package certs

import (
	"bytes"
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
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Validity of what the gate makes, and how long before its end a serving certificate is
// minted again: a year each, with a month to spare, as cert-manager's defaults for the chart
// have it; the CA lasts ten years.
const (
	CAValidity      = 10 * 365 * 24 * time.Hour
	ServingValidity = 365 * 24 * time.Hour
	RenewBefore     = 30 * 24 * time.Hour
)

// Keys of the CA's Secret.
const (
	CACert = "ca.crt"
	CAKey  = "ca.key"
)

// Manager keeps the webhooks' certificate. Its Client must read the API, not a cache: the
// Secret and the webhook configurations are read once in a while, and never cached.
type Manager struct {
	Client client.Client
	// Namespace is the gate's; Secret names the CA's Secret there; Service names the
	// webhook Service, whose DNS names the serving certificate carries.
	Namespace, Secret, Service string
	// Dir is where the webhook server reads tls.crt and tls.key.
	Dir string
	// Mutating and Validating name the webhook configurations whose caBundle the gate keeps:
	// of each, the webhooks that call Service.
	Mutating, Validating []string
	// Interval is how often Start checks the caBundle and the serving certificate.
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (m *Manager) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// Setup makes sure the CA exists, the serving certificate is in Dir and the caBundle is
// the CA: before the webhook server starts, which reads Dir once at its start.
func (m *Manager) Setup(ctx context.Context) error {
	ca, err := m.ca(ctx)
	if err != nil {
		return err
	}
	if err := m.serve(ca); err != nil {
		return err
	}
	return m.inject(ctx, ca.certPEM)
}

// Start checks, every Interval until ctx ends, that the serving certificate is not about
// to expire and that the caBundle is still the CA. It runs on every replica: each serves
// with its own certificate, and the caBundle they write is the same.
func (m *Manager) Start(ctx context.Context) error {
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := m.Setup(ctx); err != nil {
			logf.FromContext(ctx).Error(err, "Keeping the webhook certificate", "secret", m.Namespace+"/"+m.Secret)
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (m *Manager) NeedLeaderElection() bool { return false }

// authority is the CA: its certificate (parsed and as PEM) and key.
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// ca reads the CA from its Secret, making it first if there is none. A Secret it cannot
// read as a CA is an error, never overwritten: it may be someone else's.
func (m *Manager) ca(ctx context.Context) (*authority, error) {
	key := types.NamespacedName{Namespace: m.Namespace, Name: m.Secret}
	s := &corev1.Secret{}
	err := m.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		s, err = m.createCA(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the webhook CA from Secret %s: %w", key, err)
	}
	ca, err := parseCA(s.Data[CACert], s.Data[CAKey])
	if err != nil {
		return nil, fmt.Errorf("the Secret %s holds no CA the gate can use (%s, %s): %w; delete it and the gate makes a new one", key, CACert, CAKey, err)
	}
	return ca, nil
}

// createCA makes a CA and its Secret; a replica that loses the race reads the winner's.
func (m *Manager) createCA(ctx context.Context) (*corev1.Secret, error) {
	certPEM, keyPEM, err := newCA(m.now())
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Secret,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "startupgate"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{CACert: certPEM, CAKey: keyPEM},
	}
	switch err = m.Client.Create(ctx, s); {
	case apierrors.IsAlreadyExists(err):
		s = &corev1.Secret{}
		return s, m.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Secret}, s)
	case err != nil:
		return nil, err
	}
	logf.FromContext(ctx).Info("Made the webhook CA", "secret", m.Namespace+"/"+m.Secret)
	return s, nil
}

// newCA makes a self-signed CA certificate and its key, as PEM.
func newCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	return issue(&x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "startupgate-webhook-ca"},
		NotBefore:             now.Add(-time.Hour), // a little clock skew between replicas and the apiserver
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

// issue makes a key and the certificate tmpl describes for it, signed by ca, or by itself
// when ca is nil, both as PEM.
func issue(tmpl *x509.Certificate, ca *authority) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// parseCert reads the first PEM certificate of b.
func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseCA(certPEM, keyPEM []byte) (*authority, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("the certificate is no CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the key is not the certificate's")
	}
	return &authority{cert: cert, certPEM: certPEM, key: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on the platforms Go supports
	}
	return n
}

// DNSNames are the names the serving certificate carries: the Service's, as the apiserver
// dials it, and its longer forms.
func (m *Manager) DNSNames() []string {
	svc := m.Service + "." + m.Namespace
	return []string{m.Service, svc, svc + ".svc", svc + ".svc.cluster.local"}
}

// serve mints a serving certificate from ca into Dir, unless the one there is the CA's,
// carries the Service's names and is not about to expire.
func (m *Manager) serve(ca *authority) error {
	crtPath, keyPath := filepath.Join(m.Dir, "tls.crt"), filepath.Join(m.Dir, "tls.key")
	if current(crtPath, ca, m.DNSNames()[2], m.now()) {
		return nil
	}
	now := m.now()
	certPEM, keyPEM, err := issue(&x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: m.DNSNames()[2]},
		DNSNames:     m.DNSNames(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServingValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return err
	}
	// The key first: the webhook server reloads when tls.crt changes, and must find the
	// new key beside it then.
	if err := writeAtomic(keyPath, keyPEM); err != nil {
		return err
	}
	return writeAtomic(crtPath, certPEM)
}

// current reports whether the certificate at path was signed by ca, names dnsName and is
// valid for more than RenewBefore from now.
func current(path string, ca *authority, dnsName string, now time.Time) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	cert, err := parseCert(b)
	if err != nil || cert.CheckSignatureFrom(ca.cert) != nil || cert.VerifyHostname(dnsName) != nil {
		return false
	}
	return now.Add(RenewBefore).Before(cert.NotAfter)
}

// writeAtomic writes the file whole or not at all: a reader never sees half of it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// inject writes caPEM into the caBundle of every webhook that calls the Service, in the
// webhook configurations Mutating and Validating name. A configuration that does not exist
// is skipped (the Pod guard's, when it is off). Each write carries the resourceVersion it
// read: one that lost a race is made again at the next check.
func (m *Manager) inject(ctx context.Context, caPEM []byte) error {
	var errs []error
	for _, name := range m.Mutating {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		errs = append(errs, m.update(ctx, name, c, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(c.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}, caPEM))
	}
	for _, name := range m.Validating {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		errs = append(errs, m.update(ctx, name, c, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(c.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}, caPEM))
	}
	return errors.Join(errs...)
}

// clientConfigs are the client configs of webhooks, each from cc.
func clientConfigs[W any](webhooks []W, cc func(*W) *admissionregistrationv1.WebhookClientConfig) []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
	for i := range webhooks {
		out[i] = cc(&webhooks[i])
	}
	return out
}

// update reads the configuration name into obj and, when one of its webhooks that call the
// Service has another caBundle, writes caPEM there.
func (m *Manager) update(ctx context.Context, name string, obj client.Object, configs func() []*admissionregistrationv1.WebhookClientConfig, caPEM []byte) error {
	if err := m.Client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	changed := false
	for _, cc := range configs() {
		if cc.Service == nil || cc.Service.Name != m.Service || cc.Service.Namespace != m.Namespace || bytes.Equal(cc.CABundle, caPEM) {
			continue
		}
		cc.CABundle, changed = caPEM, true
	}
	if !changed {
		return nil
	}
	if err := m.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("writing the CA into webhook configuration %s: %w", name, err)
	}
	logf.FromContext(ctx).Info("Wrote the webhook CA into the caBundle", "configuration", name)
	return nil
}

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
//     it out;
//   - a rotation (Rotate, `gate rotate-ca`) puts a new CA in the Secret and keeps the old
//     one trusted beside it for an overlap: the caBundle holds both, the replicas switch to
//     certificates of the new CA once the caBundle has it, and the old CA leaves the
//     caBundle at the overlap's end, so no webhook call meets a certificate the apiserver
//     does not trust.
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
	"sync"
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

// Keys of the CA's Secret. PreviousCACert is the CA a rotation replaced, trusted beside the
// new one until the PreviousUntil annotation's time.
const (
	CACert         = "ca.crt"
	CAKey          = "ca.key"
	PreviousCACert = "previous-ca.crt"
)

// InjectFrom is the annotation of a webhook configuration whose caBundle the gate keeps:
// the CA's Secret, as NAMESPACE/NAME. A configuration without it is left alone, so that
// after an upgrade to another way of making the certificate (the chart's certificates.mode)
// a replica of the old way, still running, no longer writes its CA over the new one.
const InjectFrom = "startup.k8s.io/inject-ca-from"

// Annotations a rotation writes on the CA's Secret, as RFC 3339 times.
const (
	RotatedAt     = "startup.k8s.io/ca-rotated-at"
	PreviousUntil = "startup.k8s.io/previous-ca-until"
)

// SwitchAfter is how long after a rotation the replicas keep serving certificates of the
// previous CA: time for a replica's check (every Interval, 15 s as cmd/gate runs it) to
// write the new CA into the caBundle and for every apiserver to see it. MinOverlap is the
// shortest overlap Rotate takes: the switch, then each replica's next check and its webhook
// server's reload of the new certificate, with room to spare.
const (
	SwitchAfter = 45 * time.Second
	MinOverlap  = 2 * time.Minute
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

	skipped sync.Map // names of configurations leftAlone has logged
}

func (m *Manager) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// Setup makes sure the CA exists, the caBundle trusts it (and a rotation's previous CA
// during its overlap), and the serving certificate is in Dir: before the webhook server
// starts, which reads Dir once at its start. The caBundle comes first: a replica switches
// to the new CA's certificate only at a check that found the caBundle holding it already,
// written at an earlier check (one Interval ago or more), which the apiservers have seen.
func (m *Manager) Setup(ctx context.Context) error {
	ca, err := m.ca(ctx)
	if err != nil {
		return err
	}
	wrote, injectErr := m.inject(ctx, ca.bundle())
	return errors.Join(m.serve(ca, injectErr == nil && !wrote), injectErr)
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

// authority is the CA: its certificate (parsed and as PEM) and key, and while a rotation's
// overlap runs, the CA it replaced and when the replicas stop serving that one's
// certificates.
type authority struct {
	cert        *x509.Certificate
	certPEM     []byte
	key         *ecdsa.PrivateKey
	previous    *x509.Certificate
	previousPEM []byte
	switchAt    time.Time
}

// bundle is what the caBundle holds: the CA, and the previous one during an overlap.
func (a *authority) bundle() []byte {
	if a.previous == nil {
		return a.certPEM
	}
	return append(append(bytes.TrimRight(bytes.Clone(a.certPEM), "\n"), '\n'), a.previousPEM...)
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
	if err := ca.trustPrevious(s, m.now()); err != nil {
		// The rotation's record is damaged: the caBundle then holds the new CA alone, and a
		// replica still on the old one fails calls until its next check, as without an overlap.
		logf.FromContext(ctx).Error(err, "Ignoring the previous webhook CA", "secret", key.String())
	}
	return ca, nil
}

// trustPrevious keeps the CA a rotation replaced, from the Secret, while its overlap runs.
func (a *authority) trustPrevious(s *corev1.Secret, now time.Time) error {
	prevPEM := s.Data[PreviousCACert]
	if len(prevPEM) == 0 {
		return nil
	}
	rotated, err1 := time.Parse(time.RFC3339, s.Annotations[RotatedAt])
	until, err2 := time.Parse(time.RFC3339, s.Annotations[PreviousUntil])
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("annotations %s and %s: %w", RotatedAt, PreviousUntil, err)
	}
	if !now.Before(until) {
		return nil
	}
	prev, err := parseCert(prevPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", PreviousCACert, err)
	}
	a.previous, a.previousPEM, a.switchAt = prev, prevPEM, rotated.Add(SwitchAfter)
	return nil
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

// serve mints a serving certificate from ca into Dir, unless the one there may stay (keep).
// trusted says the caBundle held ca before this check.
func (m *Manager) serve(ca *authority, trusted bool) error {
	crtPath, keyPath := filepath.Join(m.Dir, "tls.crt"), filepath.Join(m.Dir, "tls.key")
	if keep(readCert(crtPath), ca, m.DNSNames()[2], m.now(), trusted) {
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

// readCert is the certificate at path, or nil.
func readCert(path string) *x509.Certificate {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	cert, err := parseCert(b)
	if err != nil {
		return nil
	}
	return cert
}

// keep reports whether a serving certificate may stay: it names dnsName, is valid for more
// than RenewBefore from now, and was signed by ca, or by the CA a rotation replaced until
// the switch (and after it, until a check finds the caBundle already trusting ca: only the
// old CA is sure to be trusted before).
func keep(cert *x509.Certificate, ca *authority, dnsName string, now time.Time, trusted bool) bool {
	if cert == nil || cert.VerifyHostname(dnsName) != nil || !now.Add(RenewBefore).Before(cert.NotAfter) {
		return false
	}
	if cert.CheckSignatureFrom(ca.cert) == nil {
		return true
	}
	return ca.previous != nil && cert.CheckSignatureFrom(ca.previous) == nil && (now.Before(ca.switchAt) || !trusted)
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
// webhook configurations Mutating and Validating name, and reports whether it wrote any. A
// configuration that does not exist is skipped (the Pod guard's, when it is off), and so is
// one whose InjectFrom annotation does not name the CA's Secret. Each write carries the
// resourceVersion it read: one that lost a race is made again at the next check.
func (m *Manager) inject(ctx context.Context, caPEM []byte) (bool, error) {
	var errs []error
	wrote := false
	note := func(w bool, err error) { wrote, errs = wrote || w, append(errs, err) }
	for _, name := range m.Mutating {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		note(m.update(ctx, name, c, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(c.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}, caPEM))
	}
	for _, name := range m.Validating {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		note(m.update(ctx, name, c, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(c.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}, caPEM))
	}
	return wrote, errors.Join(errs...)
}

// leftAlone logs once per configuration that its caBundle is not the gate's to keep.
func (m *Manager) leftAlone(ctx context.Context, name, from string) {
	if _, seen := m.skipped.LoadOrStore(name, true); !seen {
		logf.FromContext(ctx).Info("Leaving the caBundle of a webhook configuration alone: its annotation does not name the gate's CA",
			"configuration", name, "annotation", InjectFrom, "value", from, "secret", m.Namespace+"/"+m.Secret)
	}
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
// Service has another caBundle, writes caPEM there; it reports whether it wrote.
func (m *Manager) update(ctx context.Context, name string, obj client.Object, configs func() []*admissionregistrationv1.WebhookClientConfig, caPEM []byte) (bool, error) {
	if err := m.Client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if from := obj.GetAnnotations()[InjectFrom]; from != m.Namespace+"/"+m.Secret {
		m.leftAlone(ctx, name, from)
		return false, nil
	}
	changed := false
	for _, cc := range configs() {
		if cc.Service == nil || cc.Service.Name != m.Service || cc.Service.Namespace != m.Namespace || bytes.Equal(cc.CABundle, caPEM) {
			continue
		}
		cc.CABundle, changed = caPEM, true
	}
	if !changed {
		return false, nil
	}
	if err := m.Client.Update(ctx, obj); err != nil {
		return false, fmt.Errorf("writing the CA into webhook configuration %s: %w", name, err)
	}
	logf.FromContext(ctx).Info("Wrote the webhook CA into the caBundle", "configuration", name)
	return true, nil
}

// Rotate puts a new CA in the Secret key names and keeps the one it replaces trusted until
// now+overlap: the replicas write both into the caBundle, serve certificates of the new
// one from SwitchAfter on, and take the old one out of the caBundle when the overlap ends.
// It refuses an overlap shorter than MinOverlap, a Secret that holds no CA, and a rotation
// while an earlier one's overlap runs (its old CA may still be served). The write carries
// the resourceVersion it read. now must agree with the replicas' clocks: they switch and
// end the overlap by the times written.
func Rotate(ctx context.Context, c client.Client, key types.NamespacedName, overlap time.Duration, now time.Time) (time.Time, error) {
	if overlap < MinOverlap {
		return time.Time{}, fmt.Errorf("an overlap of %s is shorter than %s: the replicas may not all have switched to the new CA by its end", overlap, MinOverlap)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return time.Time{}, fmt.Errorf("reading the webhook CA from Secret %s: %w", key, err)
	}
	old, err := parseCA(s.Data[CACert], s.Data[CAKey])
	if err != nil {
		return time.Time{}, fmt.Errorf("the Secret %s holds no CA the gate can use: %w", key, err)
	}
	// A damaged record of the last rotation is not trusted by the replicas either (ca):
	// the rotation writes over it.
	if err := old.trustPrevious(s, now); err == nil && old.previous != nil {
		until, _ := time.Parse(time.RFC3339, s.Annotations[PreviousUntil])
		return time.Time{}, fmt.Errorf("the last rotation's overlap runs until %s: a rotation now would stop trusting a CA a replica may still serve", until.Format(time.RFC3339))
	}
	certPEM, keyPEM, err := newCA(now)
	if err != nil {
		return time.Time{}, err
	}
	until := now.Add(overlap).Truncate(time.Second)
	s.Data[PreviousCACert], s.Data[CACert], s.Data[CAKey] = old.certPEM, certPEM, keyPEM
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[RotatedAt], s.Annotations[PreviousUntil] = now.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)
	if err := c.Update(ctx, s); err != nil {
		return time.Time{}, fmt.Errorf("writing the new CA into Secret %s: %w", key, err)
	}
	return until, nil
}

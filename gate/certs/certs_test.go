package certs

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// mutating is the gate's node webhook configuration, calling svc in ns, as the chart
// renders it under `helm template`: no caBundle.
func mutating(name, ns, svc string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{InjectFrom: "gate-ns/gate-ca"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "node.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svc}}}}}
}

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), funcs)
}

func manager(t *testing.T, c client.Client, now *time.Time) *Manager {
	t.Helper()
	return &Manager{Client: c, Namespace: "gate-ns", Secret: "gate-ca", Service: "gate-webhook", Dir: t.TempDir(),
		Mutating: []string{"gate", "absent"}, Validating: []string{"gate-pod-guard"}, Interval: time.Hour, Now: func() time.Time { return *now }}
}

// served is the serving certificate in m.Dir, checked against the CA in the caBundle as
// the apiserver checks it when it dials the Service.
func served(t *testing.T, m *Manager, caBundle []byte, at time.Time) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.Dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("tls.crt holds no PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		t.Fatalf("caBundle %q holds no certificate", caBundle)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "gate-webhook.gate-ns.svc", Roots: roots, CurrentTime: at}); err != nil {
		t.Errorf("the serving certificate does not verify against the caBundle for the Service's name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.Dir, "tls.key")); err != nil {
		t.Error(err)
	}
	return cert
}

func caBundle(t *testing.T, c client.Client, name string) []byte {
	t.Helper()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, mwc); err != nil {
		t.Fatal(err)
	}
	return mwc.Webhooks[0].ClientConfig.CABundle
}

// TestTwoReplicasServeUnderOneCA: the first replica makes the CA, the second reads it back;
// each serves with its own certificate, and the webhook's caBundle trusts both. A webhook
// that calls another Service keeps its caBundle.
func TestTwoReplicasServeUnderOneCA(t *testing.T) {
	now := t0
	other := mutating("other", "gate-ns", "someone-else")
	other.Webhooks[0].ClientConfig.CABundle = []byte("theirs")
	c := newClient(t, interceptor.Funcs{}, mutating("gate", "gate-ns", "gate-webhook"), other)
	a, b := manager(t, c, &now), manager(t, c, &now)
	for _, m := range []*Manager{a, b} {
		if err := m.Setup(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bundle := caBundle(t, c, "gate")
	if len(bundle) == 0 {
		t.Fatal("no caBundle written")
	}
	if served(t, a, bundle, now).SerialNumber.Cmp(served(t, b, bundle, now).SerialNumber) == 0 {
		t.Error("the two replicas serve the same certificate; each should mint its own")
	}
	if got := caBundle(t, c, "other"); string(got) != "theirs" {
		t.Errorf("another Service's webhook got caBundle %q", got)
	}
}

// TestLosesTheRaceToMakeTheCA: two replicas start at once; the one whose create finds the
// Secret already there serves under the winner's CA, not its own.
func TestLosesTheRaceToMakeTheCA(t *testing.T) {
	now := t0
	winner := newClient(t, interceptor.Funcs{})
	w := manager(t, winner, &now)
	if err := w.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	won := &corev1.Secret{}
	if err := winner.Get(context.Background(), types.NamespacedName{Namespace: "gate-ns", Name: "gate-ca"}, won); err != nil {
		t.Fatal(err)
	}
	won.ResourceVersion = ""
	c := newClient(t, interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if err := cl.Create(ctx, won.DeepCopy()); err != nil { // the other replica, a moment earlier
			return err
		}
		return apierrors.NewAlreadyExists(corev1.Resource("secrets"), obj.GetName())
	}}, mutating("gate", "gate-ns", "gate-webhook"))
	m := manager(t, c, &now)
	if err := m.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := caBundle(t, c, "gate"); string(got) != string(won.Data[CACert]) {
		t.Errorf("caBundle is not the winner's CA")
	}
	served(t, m, won.Data[CACert], now)
}

// TestSecretNotOverwritten: a Secret of that name that holds no usable CA is an error that
// says what to do, and stays as it was.
func TestSecretNotOverwritten(t *testing.T) {
	now := t0
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gate-ns", Name: "gate-ca"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	c := newClient(t, interceptor.Funcs{}, theirs)
	err := manager(t, c, &now).Setup(context.Background())
	if err == nil {
		t.Fatal("Setup accepted a Secret with no CA")
	}
	t.Log(err)
	got := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(theirs), got); err != nil || string(got.Data["password"]) != "hunter2" || len(got.Data) != 1 {
		t.Errorf("the Secret was changed: %v %v", got.Data, err)
	}
}

// TestRenewsBeforeExpiry: the serving certificate is minted again once it is within
// RenewBefore of its end, and not before.
func TestRenewsBeforeExpiry(t *testing.T) {
	now := t0
	c := newClient(t, interceptor.Funcs{}, mutating("gate", "gate-ns", "gate-webhook"))
	m := manager(t, c, &now)
	if err := m.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	bundle := caBundle(t, c, "gate")
	first := served(t, m, bundle, now)
	for _, tc := range []struct {
		at    time.Time
		fresh bool
	}{
		{first.NotAfter.Add(-RenewBefore - time.Hour), false},
		{first.NotAfter.Add(-RenewBefore + time.Hour), true},
	} {
		now = tc.at
		if err := m.Setup(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := served(t, m, bundle, now)
		if fresh := got.SerialNumber.Cmp(first.SerialNumber) != 0; fresh != tc.fresh {
			t.Errorf("at %s (%s before the end): minted again %v, want %v", now, first.NotAfter.Sub(now), fresh, tc.fresh)
		}
	}
}

// TestCABundleRestored: a sync of manifests rendered without a caBundle takes it out; the
// next check writes it back, and a check with nothing to do writes nothing.
func TestCABundleRestored(t *testing.T) {
	now := t0
	updates := 0
	c := newClient(t, interceptor.Funcs{Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		updates++
		return cl.Update(ctx, obj, opts...)
	}}, mutating("gate", "gate-ns", "gate-webhook"))
	m := manager(t, c, &now)
	if err := m.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	bundle := caBundle(t, c, "gate")
	if err := m.Setup(context.Background()); err != nil || updates != 1 {
		t.Fatalf("a check with the caBundle in place: %d writes in all (%v), want the first one only", updates, err)
	}
	synced := mutating("gate", "gate-ns", "gate-webhook")
	cur := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: "gate"}, cur); err != nil {
		t.Fatal(err)
	}
	synced.ResourceVersion = cur.ResourceVersion
	if err := c.Update(context.Background(), synced); err != nil {
		t.Fatal(err)
	}
	if err := m.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := caBundle(t, c, "gate"); string(got) != string(bundle) {
		t.Errorf("caBundle after a sync took it out: %q, want the CA back", got)
	}
}

// TestUpdateConflictIsAnError: a write that lost a race to another writer is reported, and
// made again at the next check rather than retried blind.
func TestUpdateConflictIsAnError(t *testing.T) {
	now := t0
	c := newClient(t, interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
		return apierrors.NewConflict(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), "gate", errors.New("changed"))
	}}, mutating("gate", "gate-ns", "gate-webhook"))
	if err := manager(t, c, &now).Setup(context.Background()); !apierrors.IsConflict(err) {
		t.Errorf("Setup() = %v, want the conflict", err)
	}
}

// TestLeavesAnotherModesCABundle: after an upgrade to another certificates.mode, the
// configuration no longer names the gate's Secret in its InjectFrom annotation and carries
// the new mode's caBundle; a replica of the old mode, still running, leaves it as it is.
// The same configuration with the annotation back gets the gate's CA.
func TestLeavesAnotherModesCABundle(t *testing.T) {
	now := t0
	for _, tc := range []struct {
		name       string
		annotation map[string]string
		written    bool
	}{
		{"no annotation", nil, false},
		{"another Secret", map[string]string{InjectFrom: "gate-ns/someone-else"}, false},
		{"the gate's Secret", map[string]string{InjectFrom: "gate-ns/gate-ca"}, true},
	} {
		cfg := mutating("gate", "gate-ns", "gate-webhook")
		cfg.Annotations = tc.annotation
		cfg.Webhooks[0].ClientConfig.CABundle = []byte("the self-signed mode's CA")
		c := newClient(t, interceptor.Funcs{}, cfg)
		setup(t, manager(t, c, &now))
		if written := string(caBundle(t, c, "gate")) != "the self-signed mode's CA"; written != tc.written {
			t.Errorf("%s: caBundle written %v, want %v", tc.name, written, tc.written)
		}
	}
}

package certs

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var caKey = types.NamespacedName{Namespace: "gate-ns", Name: "gate-ca"}

// verifies is the apiserver's check of a serving certificate against a caBundle.
func verifies(cert *x509.Certificate, bundle []byte, at time.Time) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	_, err := cert.Verify(x509.VerifyOptions{DNSName: "gate-webhook.gate-ns.svc", Roots: roots, CurrentTime: at})
	return err
}

func setup(t *testing.T, ms ...*Manager) {
	t.Helper()
	for _, m := range ms {
		if err := m.Setup(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRotationOverlap walks a rotation with two replicas that check at different moments,
// and checks at each step that what each serves verifies against the caBundle: that is
// every webhook call the apiserver makes meanwhile. The first replica checks right after
// the rotation, the switch and the overlap's end; the second lags each time.
func TestRotationOverlap(t *testing.T) {
	now := t0
	c := newClient(t, interceptor.Funcs{}, mutating("gate", "gate-ns", "gate-webhook"))
	a, b := manager(t, c, &now), manager(t, c, &now)
	setup(t, a, b)
	oldCA := caBundle(t, c, "gate")

	rotated := t0.Add(time.Hour)
	until, err := Rotate(context.Background(), c, caKey, 10*time.Minute, rotated)
	if err != nil {
		t.Fatal(err)
	}
	if want := rotated.Add(10 * time.Minute); !until.Equal(want) {
		t.Errorf("the overlap ends at %s, want %s", until, want)
	}
	if _, err := Rotate(context.Background(), c, caKey, 10*time.Minute, rotated.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "overlap runs until") {
		t.Errorf("a second rotation within the overlap: %v, want refused", err)
	}
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), caKey, s); err != nil {
		t.Fatal(err)
	}
	newCA := s.Data[CACert]

	for _, step := range []struct {
		name     string
		at       time.Duration // after the rotation
		check    []*Manager
		bundle   [][]byte // the CAs the caBundle holds
		aNew     bool     // a serves a certificate of the new CA
		bNew     bool
		bOldOnly bool // b's certificate, of the old CA, would fail against the new CA alone
	}{
		{"a's check after the rotation", 5 * time.Second, []*Manager{a}, [][]byte{newCA, oldCA}, false, false, true},
		{"b's check before the switch", SwitchAfter - time.Second, []*Manager{b}, [][]byte{newCA, oldCA}, false, false, true},
		{"a's check at the switch", SwitchAfter, []*Manager{a}, [][]byte{newCA, oldCA}, true, false, true},
		{"b's check after it", SwitchAfter + 15*time.Second, []*Manager{b}, [][]byte{newCA, oldCA}, true, true, false},
		{"both at the overlap's end", 10 * time.Minute, []*Manager{a, b}, [][]byte{newCA}, true, true, false},
	} {
		now = rotated.Add(step.at)
		setup(t, step.check...)
		bundle := caBundle(t, c, "gate")
		if want := string(joinPEM(step.bundle...)); string(bundle) != want {
			t.Errorf("%s: caBundle holds %d certificate(s), want %d", step.name, strings.Count(string(bundle), "BEGIN"), len(step.bundle))
		}
		for _, r := range []struct {
			name string
			m    *Manager
			new  bool
		}{{"a", a, step.aNew}, {"b", b, step.bNew}} {
			cert := served(t, r.m, bundle, now)
			if got := verifies(cert, newCA, now) == nil; got != r.new {
				t.Errorf("%s: replica %s serves a certificate of the new CA: %v, want %v", step.name, r.name, got, r.new)
			}
		}
		// The negative control: what an overlap-free rotation (the Secret deleted) would give.
		if got := verifies(served(t, b, bundle, now), newCA, now) != nil; got != step.bOldOnly {
			t.Errorf("%s: replica b's certificate fails against the new CA alone: %v, want %v", step.name, got, step.bOldOnly)
		}
	}
	if _, err := Rotate(context.Background(), c, caKey, 10*time.Minute, now); err != nil {
		t.Errorf("a rotation after the overlap: %v", err)
	}
}

func joinPEM(pems ...[]byte) []byte {
	a := &authority{certPEM: pems[0]}
	if len(pems) > 1 {
		a.previous, a.previousPEM = &x509.Certificate{}, pems[1]
	}
	return a.bundle()
}

// TestKeepsTheOldCertificateWhileTheBundleCannotBeWritten: past the switch, a replica that
// could not write the caBundle keeps the old CA's certificate, which is the one the caBundle
// is sure to trust; so does it at the check that writes the caBundle at last (the
// apiservers have yet to see it), and it switches at the next.
func TestKeepsTheOldCertificateWhileTheBundleCannotBeWritten(t *testing.T) {
	now := t0
	var failing bool
	c := newClient(t, interceptor.Funcs{Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if _, secret := obj.(*corev1.Secret); failing && !secret {
			return context.DeadlineExceeded
		}
		return cl.Update(ctx, obj, opts...)
	}}, mutating("gate", "gate-ns", "gate-webhook"))
	m := manager(t, c, &now)
	setup(t, m)
	oldCA := caBundle(t, c, "gate")
	if _, err := Rotate(context.Background(), c, caKey, 10*time.Minute, now); err != nil {
		t.Fatal(err)
	}
	failing, now = true, now.Add(SwitchAfter+time.Second)
	if err := m.Setup(context.Background()); err == nil {
		t.Fatal("Setup did not report the failed caBundle write")
	}
	served(t, m, oldCA, now)
	failing = false
	setup(t, m)
	if cert := served(t, m, caBundle(t, c, "gate"), now); verifies(cert, oldCA, now) != nil {
		t.Error("at the check that wrote the caBundle, the replica already serves the new CA's certificate")
	}
	now = now.Add(15 * time.Second)
	setup(t, m)
	if cert := served(t, m, caBundle(t, c, "gate"), now); verifies(cert, oldCA, now) == nil {
		t.Error("a check after the caBundle was written, the replica still serves the old CA's certificate")
	}
}

// TestRotateRefuses: too short an overlap and a Secret that is no CA are refused, and the
// Secret is left as it was; a damaged record of the last rotation, which no replica
// trusts, is written over.
func TestRotateRefuses(t *testing.T) {
	now := t0
	c := newClient(t, interceptor.Funcs{}, mutating("gate", "gate-ns", "gate-webhook"))
	setup(t, manager(t, c, &now))
	damaged := &corev1.Secret{}
	if err := c.Get(context.Background(), caKey, damaged); err != nil {
		t.Fatal(err)
	}
	damaged.Data[PreviousCACert] = damaged.Data[CACert]
	damaged.Annotations = map[string]string{RotatedAt: "yesterday", PreviousUntil: now.Format(time.RFC3339)}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gate-ns", Name: "gate-ca"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	for _, tc := range []struct {
		name    string
		secret  *corev1.Secret
		overlap time.Duration
		want    string
	}{
		{"a short overlap", nil, MinOverlap - time.Second, "shorter than"},
		{"no CA", theirs, 10 * time.Minute, "holds no CA"},
	} {
		cl := c
		if tc.secret != nil {
			cl = newClient(t, interceptor.Funcs{}, tc.secret.DeepCopy())
		}
		before := &corev1.Secret{}
		if err := cl.Get(context.Background(), caKey, before); err != nil {
			t.Fatal(err)
		}
		_, err := Rotate(context.Background(), cl, caKey, tc.overlap, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
		after := &corev1.Secret{}
		if err := cl.Get(context.Background(), caKey, after); err != nil || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s: the Secret was written (%v)", tc.name, err)
		}
	}
	cl := newClient(t, interceptor.Funcs{}, damaged.DeepCopy())
	if _, err := Rotate(context.Background(), cl, caKey, 10*time.Minute, now); err != nil {
		t.Errorf("a damaged record of the last rotation: %v, want it written over", err)
	}
	after := &corev1.Secret{}
	if err := cl.Get(context.Background(), caKey, after); err != nil || string(after.Data[PreviousCACert]) != string(damaged.Data[CACert]) || after.Annotations[RotatedAt] != now.UTC().Format(time.RFC3339) {
		t.Errorf("after rotating over a damaged record: previous %q, annotations %v (%v)", after.Data[PreviousCACert], after.Annotations, err)
	}
}

package servingcert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the certificate verifies against the returned CA for each name it was issued
// for, and for no other.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	names := Names{IPs: []net.IP{net.ParseIP("192.0.2.7"), net.ParseIP("10.0.0.1")}, DNS: []string{"kubernetes.default.svc"}}
	ca, err := Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), names)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the CA bundle holds no certificate")
	}
	for name, want := range map[string]bool{"192.0.2.7": true, "10.0.0.1": true, "kubernetes.default.svc": true, "127.0.0.1": false, "localhost": false} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		if (err == nil) != want {
			t.Errorf("verifying for %s: %v, want valid=%t", name, err, want)
		}
	}
}

// TestWriteSigner: the signer's key pair loads, as the apiserver reads it.
func TestWriteSigner(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "sa.crt"), filepath.Join(dir, "sa.key")
	if err := WriteSigner(cert, key); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file's mode is %v; want 0600", fi.Mode().Perm())
	}
}

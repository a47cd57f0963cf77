// Package servingcert issues TLS serving certificates from a CA made once per process: the
// simulator's webhook servers and the embedded apiserver serve real TLS that their clients
// verify, without a certificate ever being written to the repository or reused by a run.
// It issues client certificates from the same CA, which a real node's kubelet requires of
// its callers (the apiserver, the tests).
package servingcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

var (
	caOnce sync.Once
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	caErr  error
)

// Names are what a certificate is valid for.
type Names struct {
	IPs []net.IP
	DNS []string
}

// Loopback is 127.0.0.1 and localhost.
var Loopback = Names{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNS: []string{"localhost"}}

// Write writes a certificate for names to certFile and its key to keyFile, signed by this
// process's CA, and returns the CA bundle (PEM) that its clients must trust.
func Write(certFile, keyFile string, names Names) ([]byte, error) {
	caOnce.Do(makeCA)
	if caErr != nil {
		return nil, fmt.Errorf("creating CA: %w", caErr)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, err
	}
	cn := "localhost"
	if len(names.IPs) > 0 {
		cn = names.IPs[0].String()
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: names.IPs, DNSNames: names.DNS,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := writePair(certFile, keyFile, der, key); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// CA is this process's CA, as PEM: what a server that authenticates the clients of
// WriteClient and Client trusts.
func CA() ([]byte, error) {
	caOnce.Do(makeCA)
	if caErr != nil {
		return nil, fmt.Errorf("creating CA: %w", caErr)
	}
	return caPEM, nil
}

// Client is a client certificate for cn, signed by this process's CA, and its key.
func Client(cn string) (tls.Certificate, error) {
	der, key, err := issueClient(cn)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// WriteClient writes a client certificate for cn, signed by this process's CA, and its key.
func WriteClient(certFile, keyFile, cn string) error {
	der, key, err := issueClient(cn)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, der, key)
}

func issueClient(cn string) ([]byte, *ecdsa.PrivateKey, error) {
	if _, err := CA(); err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	return der, key, err
}

// WriteSigner writes a new self-signed key pair: a signing key (an apiserver's
// ServiceAccount token signer) and the certificate that verifiers read its public key from.
func WriteSigner(certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "startupgate-sim-signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, der, key)
}

// writePair writes a certificate (DER) and its key as PEM files.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

func makeCA() {
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
}

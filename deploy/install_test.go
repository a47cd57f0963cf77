package deploy_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installDoc is where the default install is written down for operators, and installSteps
// are its commands, in order. TestKustomizeInstall walks each of them, and
// TestInstallStepsAreTheDocs keeps the two lists one: a step added to the docs and not to
// the walk-through, or the reverse, fails.
const (
	installDoc     = "../docs/operations.md"
	installHeading = "### Install with kustomize"
)

var installSteps = []string{
	"kubectl apply -k deploy/overlays/self-signed",
	"deploy/overlays/self-signed/generate-certs.sh",
	"kubectl -n startupgate-system rollout status deploy/startupgate",
	"kubectl apply -f deploy/startup-daemonset.yaml",
}

// TestInstallStepsAreTheDocs reads the first sh block under the install heading of
// docs/operations.md, drops its comments, and compares its commands with installSteps.
func TestInstallStepsAreTheDocs(t *testing.T) {
	raw, err := os.ReadFile(installDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+installHeading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", installDoc, installHeading)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("%s: no sh block under %q", installDoc, installHeading)
	}
	block, _, _ = strings.Cut(block, "```")
	var got []string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, " #")
		if line = strings.TrimSpace(line); line != "" {
			got = append(got, line)
		}
	}
	if d := cmp.Diff(installSteps, got); d != "" {
		t.Errorf("the install in %s differs from the steps TestKustomizeInstall walks (-walked +documented):\n%s", installDoc, d)
	}
}

// TestKustomizeInstall walks the default install of docs/operations.md (installSteps), as
// far as a plane without a kubelet allows. The last step of the walk-through — a new node
// registers tainted and is released once its init Pod is ready, by the gate running under
// the deployed ServiceAccount's RBAC — is TestGateUnderDeployedRBAC/basic-join; the gate's
// Pods cannot run here.
func TestKustomizeInstall(t *testing.T) {
	c := adminClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Step 1: kubectl apply -k deploy/overlays/self-signed
	objs := render(t, "overlays/self-signed")
	daemonset := readManifests(t, "startup-daemonset.yaml")
	secret := &unstructured.Unstructured{}
	secret.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	secret.SetName("startupgate-webhook-tls")
	secret.SetNamespace(gateNamespace)
	t.Cleanup(func() { deleteAll(t, c, append(append(slices.Clone(objs), daemonset...), secret)) })
	mwc := find(objs, "MutatingWebhookConfiguration", "startupgate")
	if mwc == nil {
		t.Fatal("self-signed overlay renders no MutatingWebhookConfiguration")
	}
	// Fail closed with no endpoints: never leave it behind, even on failure.
	t.Cleanup(func() { _ = c.Delete(context.Background(), mwc.DeepCopy()) })
	if _, failed := applyAll(ctx, c, objs); len(failed) > 0 {
		for o, err := range failed {
			t.Errorf("applying %s: %v", describe(o), err)
		}
		t.FailNow()
	}

	// Step 2: deploy/overlays/self-signed/generate-certs.sh
	kubectl, kerr := exec.LookPath("kubectl")
	_, oerr := exec.LookPath("openssl")
	if kerr == nil && oerr == nil {
		cmd := exec.CommandContext(ctx, "overlays/self-signed/generate-certs.sh")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+plane.Kubeconfig(), "KUBECTL="+kubectl)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("generate-certs.sh: %v\n%s", err, out)
		}
		t.Logf("generate-certs.sh:\n%s", out)
	} else {
		// CI machines may lack kubectl (or openssl): do what the script does, in Go —
		// create the TLS Secret and patch the caBundle of every webhook — so the rest of
		// the walk-through is still checked. This is not a test of the script itself.
		t.Logf("kubectl (%v) or openssl (%v) not on PATH: running generate-certs.sh's steps in Go", kerr, oerr)
		generateCertsInGo(ctx, t, c)
	}
	sec := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: gateNamespace, Name: certSecretName(t, mustGet[appsv1.Deployment](t, objs, "Deployment", "startupgate"))}, sec); err != nil {
		t.Fatalf("the Secret the Deployment mounts: %v", err)
	}
	if sec.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", sec.Type, corev1.SecretTypeTLS)
	}
	svc := mustGet[corev1.Service](t, objs, "Service", "startupgate-webhook")
	checkServingCert(t, sec, svc.Name+"."+svc.Namespace+".svc")
	checkCABundle(ctx, t, c, sec.Data["ca.crt"])

	// docs/operations.md: "Re-applying a kustomization keeps the caBundle".
	if _, failed := applyAll(ctx, c, []*unstructured.Unstructured{mwc}); len(failed) > 0 {
		t.Fatalf("re-applying the webhook configuration: %v", failed)
	}
	checkCABundle(ctx, t, c, sec.Data["ca.crt"])
	deleteNow(ctx, t, c, mwc)

	// Step 3: kubectl -n startupgate-system rollout status deploy/startupgate. With no
	// kubelet the Pods stay Pending; the Deployment and ReplicaSet controllers creating
	// both replicas shows that the apiserver admits the Pod spec (priority class,
	// security context, probes).
	err := wait(ctx, time.Minute, func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(gateNamespace), client.MatchingLabels{"app.kubernetes.io/name": "startupgate"}); err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("%d gate Pods, want 2", len(pods.Items))
		}
		return nil
	})
	if err != nil {
		t.Errorf("rollout: %v", err)
	}

	// Step 4: kubectl apply -f deploy/startup-daemonset.yaml
	if _, failed := applyAll(ctx, c, daemonset); len(failed) > 0 {
		for o, err := range failed {
			t.Errorf("applying %s: %v", describe(o), err)
		}
	}
	ds := &appsv1.DaemonSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: gateNamespace, Name: "startup-init"}, ds); err != nil {
		t.Fatalf("init DaemonSet: %v", err)
	}
	cfg := defaultConfig(t)
	if !cfg.Tolerates(ds.Spec.Template.Spec.Tolerations) {
		t.Errorf("example init DaemonSet does not tolerate the startup taint: its nodes could never be released")
	}
	for _, comp := range cfg.Components {
		sel, err := labels.Parse(comp.Selector)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) || !cfg.PodScopes()[0].Selector.Matches(labels.Set(ds.Spec.Template.Labels)) {
			t.Errorf("example init DaemonSet Pod labels %v are not those of required component %q", ds.Spec.Template.Labels, comp.Selector)
		}
	}
}

func checkCABundle(ctx context.Context, t *testing.T, c client.Client, ca []byte) {
	t.Helper()
	wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, types.NamespacedName{Name: "startupgate"}, wh); err != nil {
		t.Fatalf("webhook configuration: %v", err)
	}
	for _, w := range wh.Webhooks {
		if len(ca) == 0 || !bytes.Equal(bytes.TrimSpace(w.ClientConfig.CABundle), bytes.TrimSpace(ca)) {
			t.Errorf("webhook %s caBundle (%d bytes) != Secret ca.crt (%d bytes)", w.Name, len(w.ClientConfig.CABundle), len(ca))
		}
	}
}

// checkServingCert: the Secret's certificate chains to its ca.crt for the Service name the
// apiserver dials, and tls.key is its key.
func checkServingCert(t *testing.T, sec *corev1.Secret, dnsName string) {
	t.Helper()
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if len(sec.Data[k]) == 0 {
			t.Fatalf("Secret lacks %s", k)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		t.Fatalf("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(sec.Data["tls.crt"])
	if block == nil {
		t.Fatalf("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for %s: %v", dnsName, err)
	}
}

// generateCertsInGo does what generate-certs.sh does, for machines without kubectl.
func generateCertsInGo(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "startupgate-webhook-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	fqdn := "startupgate-webhook." + gateNamespace + ".svc"
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: fqdn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames:    []string{"startupgate-webhook", "startupgate-webhook." + gateNamespace, fqdn, fqdn + ".cluster.local"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "startupgate-webhook-tls", Namespace: gateNamespace},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
			"ca.crt":  caPEM,
		},
	}
	if err := c.Create(ctx, sec); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wh := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, types.NamespacedName{Name: "startupgate"}, wh); err != nil {
			return err
		}
		for i := range wh.Webhooks {
			wh.Webhooks[i].ClientConfig.CABundle = caPEM
		}
		return c.Update(ctx, wh)
	})
	if err != nil {
		t.Fatalf("patching caBundle: %v", err)
	}
}

package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/sim/controlplane"
)

// The overlays operators install. deploy/base is not standalone (it lacks the webhook
// Secret), so it is only ever rendered through them.
var overlays = []string{"self-signed", "cert-manager", "policy", "pod-guard"}

const (
	gateNamespace = "startupgate-system"
	gateSA        = "startupgate"
	fieldOwner    = "startupgate-test"
	// certManagerGroup owns the only kinds allowed to fail to apply: their CRDs are not
	// installed on the embedded plane.
	certManagerGroup = "cert-manager.io"
)

// One embedded plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) serves
// every test in this package. It is started in TestMain; missing binaries fail the tests
// that need it with the error, they do not skip.
var (
	plane    *controlplane.Embedded
	planeCfg *rest.Config
	planeErr error
)

func TestMain(m *testing.M) {
	logf, err := os.CreateTemp("", "startupgate-deploy-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logf)))
	// client-go logs through klog; errors (e.g. the leader-election Event the Role does not
	// grant) would otherwise also go to stderr.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(logf)

	plane = &controlplane.Embedded{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	planeCfg, planeErr = plane.Start(ctx)
	cancel()

	code := m.Run()
	if err := plane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping plane:", err)
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "gate and client logs:", logf.Name())
	} else {
		_ = os.Remove(logf.Name())
	}
	os.Exit(code)
}

// adminConfig is the plane's admin config; it fails the test if the plane did not start.
func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	if planeErr != nil {
		t.Fatalf("starting embedded plane: %v", planeErr)
	}
	return rest.CopyConfig(planeCfg)
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(adminConfig(t), client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatalf("creating admin client: %v", err)
	}
	return c
}

// ---------------------------------------------------------------------------------------
// Rendering

// render builds a kustomization with the kustomize Go API, as `kubectl apply -k` would.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatalf("rendering %s: %v", dir, err)
		}
		out = append(out, fromYAML(t, dir, y))
	}
	if len(out) == 0 {
		t.Fatalf("%s renders no objects", dir)
	}
	return out
}

// readManifests decodes a plain multi-document manifest from deploy/.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := deploy.FS.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, path, raw)
}

// An install source renders what an overlay installs: kustomize itself, or the Helm chart
// with the values that deploy/helm's tests prove render the same objects.
type source struct {
	name   string
	render func(t *testing.T, overlay string) []*unstructured.Unstructured
}

var sources = []source{
	{"kustomize", func(t *testing.T, overlay string) []*unstructured.Unstructured {
		return render(t, filepath.Join("overlays", overlay))
	}},
	{"helm", renderedChart},
}

// renderedChart is the chart as rendered for overlay's values. deploy/helm is a module of its
// own (Helm stays out of the gate's dependencies), so its tests render the chart into
// helm/testdata and fail when that file differs from the chart. Helm creates the Namespace
// (helm install --create-namespace); it comes first here.
func renderedChart(t *testing.T, overlay string) []*unstructured.Unstructured {
	t.Helper()
	path := filepath.Join("helm", "testdata", overlay+".yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(gateNamespace)
	return append([]*unstructured.Unstructured{ns}, decodeManifests(t, path, raw)...)
}

func decodeManifests(t *testing.T, path string, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		out = append(out, fromYAML(t, path, []byte(doc)))
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func fromYAML(t *testing.T, src string, y []byte) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return u
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// typed converts strictly: a field the API type does not have (a typo such as
// readOnlyRootFileSystem) is an error, not silently dropped.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("decoding %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// mustGet is typed for a required object; it fails the test if the object is missing.
func mustGet[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	u := find(objs, kind, name)
	if u == nil {
		t.Fatalf("no %s %q rendered", kind, name)
	}
	return typed[T](t, u)
}

func defaultConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	return cfg
}

// ---------------------------------------------------------------------------------------
// (b) What the rendered overlays must contain.

func TestOverlaysRender(t *testing.T) {
	cfg := defaultConfig(t)
	wantSelector, err := policy.ObjectSelector(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, filepath.Join("overlays", overlay))
			webhookMode := overlay != "policy"

			mustGet[corev1.Namespace](t, objs, "Namespace", gateNamespace)
			sa := mustGet[corev1.ServiceAccount](t, objs, "ServiceAccount", gateSA)
			if sa.Namespace != gateNamespace {
				t.Errorf("ServiceAccount namespace = %q, want %q", sa.Namespace, gateNamespace)
			}
			mustGet[rbacv1.ClusterRole](t, objs, "ClusterRole", "startupgate")
			crb := mustGet[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "startupgate")
			checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", "startupgate")
			role := mustGet[rbacv1.Role](t, objs, "Role", "startupgate-leader-election")
			if role.Namespace != gateNamespace {
				t.Errorf("leader-election Role namespace = %q, want %q", role.Namespace, gateNamespace)
			}
			rb := mustGet[rbacv1.RoleBinding](t, objs, "RoleBinding", "startupgate-leader-election")
			checkBinding(t, rb.RoleRef, rb.Subjects, "Role", "startupgate-leader-election")

			d := mustGet[appsv1.Deployment](t, objs, "Deployment", "startupgate")
			checkDeployment(t, d, &cfg, webhookMode)
			podLabels := d.Spec.Template.Labels

			pdb := mustGet[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "startupgate")
			checkSelects(t, "PodDisruptionBudget", pdb.Spec.Selector.MatchLabels, podLabels)
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || int32(pdb.Spec.MinAvailable.IntValue()) >= *d.Spec.Replicas {
				t.Errorf("PDB minAvailable = %v: want at least 1 and fewer than the %d replicas (so a drain can proceed)", pdb.Spec.MinAvailable, *d.Spec.Replicas)
			}

			metrics := mustGet[corev1.Service](t, objs, "Service", "startupgate-metrics")
			checkSelects(t, "metrics Service", metrics.Spec.Selector, podLabels)
			checkServicePort(t, metrics, d, "--metrics-bind-address=:")

			mwc := find(objs, "MutatingWebhookConfiguration", "startupgate")
			webhookSvc := find(objs, "Service", "startupgate-webhook")
			if !webhookMode {
				if mwc != nil || webhookSvc != nil {
					t.Errorf("policy overlay still renders the webhook configuration (%v) or its Service (%v)", mwc != nil, webhookSvc != nil)
				}
				if len(ofKind(objs, "MutatingWebhookConfiguration")) != 0 {
					t.Errorf("policy overlay renders a MutatingWebhookConfiguration")
				}
				return
			}
			svc := typed[corev1.Service](t, webhookSvc)
			checkSelects(t, "webhook Service", svc.Spec.Selector, podLabels)
			checkServicePort(t, svc, d, "--webhook-port=")
			if mwc == nil {
				t.Fatalf("no MutatingWebhookConfiguration startupgate")
			}
			wh := typed[admissionregistrationv1.MutatingWebhookConfiguration](t, mwc)
			if len(wh.Webhooks) != 1 {
				t.Fatalf("MutatingWebhookConfiguration has %d webhooks, want 1", len(wh.Webhooks))
			}
			w := wh.Webhooks[0]
			checkWebhookCommon(t, w.Name, w.ClientConfig, w.SideEffects, w.TimeoutSeconds, gate.NodeWebhookPath, svc)
			if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("node webhook failurePolicy = %v, want Fail", w.FailurePolicy)
			}
			if diff := cmp.Diff(wantSelector, w.ObjectSelector, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("node webhook objectSelector differs from policy.ObjectSelector(config.DefaultConfig()) (-want +got):\n%s", diff)
			}
			if len(w.ClientConfig.CABundle) != 0 {
				t.Errorf("the manifests must never set caBundle (re-applying would clear the injected one)")
			}
			wantRules := []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}, Scope: ptrTo(admissionregistrationv1.AllScopes)},
			}}
			if diff := cmp.Diff(wantRules, w.Rules); diff != "" {
				t.Errorf("node webhook rules (-want +got):\n%s", diff)
			}

			switch overlay {
			case "self-signed":
				if len(ofKind(objs, "Secret")) != 0 {
					t.Errorf("self-signed overlay must not ship a Secret: generate-certs.sh creates it")
				}
			case "cert-manager":
				cert := find(objs, "Certificate", "startupgate-webhook")
				issuer := find(objs, "Issuer", "startupgate-selfsigned")
				if cert == nil || issuer == nil {
					t.Fatalf("cert-manager overlay: Certificate (%v) or Issuer (%v) missing", cert != nil, issuer != nil)
				}
				secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
				if want := certSecretName(t, d); secret != want {
					t.Errorf("Certificate secretName = %q, but the Deployment mounts %q", secret, want)
				}
				dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
				if fqdn := svc.Name + "." + svc.Namespace + ".svc"; !slices.Contains(dns, fqdn) {
					t.Errorf("Certificate dnsNames %v lack the Service name the apiserver dials, %s", dns, fqdn)
				}
				if got, want := wh.Annotations["cert-manager.io/inject-ca-from"], gateNamespace+"/"+cert.GetName(); got != want {
					t.Errorf("webhook inject-ca-from = %q, want %q", got, want)
				}
			case "pod-guard":
				vwc := find(objs, "ValidatingWebhookConfiguration", "startupgate-pod-guard")
				if vwc == nil {
					t.Fatalf("pod-guard overlay renders no ValidatingWebhookConfiguration startupgate-pod-guard")
				}
				v := typed[admissionregistrationv1.ValidatingWebhookConfiguration](t, vwc)
				for _, pw := range v.Webhooks {
					checkWebhookCommon(t, pw.Name, pw.ClientConfig, pw.SideEffects, pw.TimeoutSeconds, gate.PodGuardPath, svc)
					if pw.FailurePolicy == nil || *pw.FailurePolicy != admissionregistrationv1.Ignore {
						t.Errorf("pod guard failurePolicy = %v, want Ignore (a guard that fails closed blocks every Pod)", pw.FailurePolicy)
					}
				}
				if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--pod-guard=true") {
					t.Errorf("pod-guard overlay: Deployment args %v lack --pod-guard=true", args)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) {
	t.Helper()
	if ref.Kind != kind || ref.Name != name || ref.APIGroup != rbacv1.GroupName {
		t.Errorf("binding roleRef = %+v, want %s %s", ref, kind, name)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: gateSA, Namespace: gateNamespace}}
	if diff := cmp.Diff(want, subjects); diff != "" {
		t.Errorf("binding of %s %s: subjects (-want +got):\n%s", kind, name, diff)
	}
}

func checkSelects(t *testing.T, what string, selector, podLabels map[string]string) {
	t.Helper()
	if len(selector) == 0 {
		t.Errorf("%s has an empty selector", what)
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("%s selector %s=%s does not match the gate Pods' labels %v", what, k, v, podLabels)
		}
	}
}

// checkServicePort: the Service's targetPort is the port the container's flag binds.
func checkServicePort(t *testing.T, svc *corev1.Service, d *appsv1.Deployment, flagPrefix string) {
	t.Helper()
	port := ""
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, flagPrefix) {
			port = strings.TrimPrefix(a, flagPrefix)
		}
	}
	if port == "" {
		t.Errorf("Deployment args lack %s...", flagPrefix)
		return
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != port {
		t.Errorf("Service %s ports %v: want one port with targetPort %s (%sPORT)", svc.Name, svc.Spec.Ports, port, flagPrefix)
	}
}

func checkWebhookCommon(t *testing.T, name string, cc admissionregistrationv1.WebhookClientConfig, side *admissionregistrationv1.SideEffectClass,
	timeout *int32, path string, svc *corev1.Service) {
	t.Helper()
	if side == nil || *side != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("webhook %s sideEffects = %v, want None", name, side)
	}
	if timeout == nil || *timeout > 10 || *timeout < 1 {
		t.Errorf("webhook %s timeoutSeconds = %v, want 1..10", name, timeout)
	}
	s := cc.Service
	if s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace || s.Path == nil || *s.Path != path ||
		s.Port == nil || *s.Port != svc.Spec.Ports[0].Port {
		t.Errorf("webhook %s clientConfig.service = %+v, want %s/%s:%d%s", name, s, svc.Namespace, svc.Name, svc.Spec.Ports[0].Port, path)
	}
}

func certSecretName(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	t.Errorf("Deployment mounts no Secret")
	return ""
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, cfg *config.Config, webhookMode bool) {
	t.Helper()
	if d.Namespace != gateNamespace {
		t.Errorf("Deployment namespace = %q", d.Namespace)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	ps := d.Spec.Template.Spec
	if ps.ServiceAccountName != gateSA {
		t.Errorf("serviceAccountName = %q, want %q", ps.ServiceAccountName, gateSA)
	}
	if ps.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName = %q, want system-cluster-critical", ps.PriorityClassName)
	}
	// No deadlock: the gate's own Pods must be able to land on a gated node.
	if !cfg.Tolerates(ps.Tolerations) {
		t.Errorf("tolerations %v do not tolerate the startup taint %s", ps.Tolerations, cfg.Taint.ToString())
	}
	// Prefer system nodes, which the gate never gates.
	systemNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
	preferred := false
	if a := ps.Affinity; a != nil && a.NodeAffinity != nil {
		for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			for _, e := range p.Preference.MatchExpressions {
				if e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
					systemNode.Labels[e.Key] = e.Values[0]
					preferred = p.Weight > 0
				}
			}
		}
	}
	if !preferred || cfg.Gated(systemNode) {
		t.Errorf("no preferred node affinity to nodes the gate skips (got node labels %v)", systemNode.Labels)
	}
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Errorf("pod securityContext.runAsNonRoot must be true")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(ps.Containers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container has no securityContext")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("readOnlyRootFilesystem must be true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("allowPrivilegeEscalation must be false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and no add", sc.Capabilities)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = ps.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile = %v, want RuntimeDefault", seccomp)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests = %v, want cpu and memory", c.Resources.Requests)
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %v lack --leader-elect=true", c.Args)
	}
	probePort := ""
	for _, a := range c.Args {
		if p, ok := strings.CutPrefix(a, "--health-probe-bind-address=:"); ok {
			probePort = p
		}
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port != intstr.Parse(probePort) {
			t.Errorf("probe %s = %+v, want httpGet %s on the health port %q", name, p, name, probePort)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	wantWebhook := map[bool]string{true: "1", false: "0"}[webhookMode]
	if env["STARTUP_WEBHOOK"] != wantWebhook {
		t.Errorf("STARTUP_WEBHOOK = %q, want %q", env["STARTUP_WEBHOOK"], wantWebhook)
	}
	mountsCerts := false
	for _, m := range c.VolumeMounts {
		mountsCerts = mountsCerts || m.MountPath == "/tmp/k8s-webhook-server/serving-certs"
	}
	if mountsCerts != webhookMode {
		t.Errorf("container mounts the webhook certificate: %v, want %v", mountsCerts, webhookMode)
	}
}

// TestNoRBACWildcards: no rule anywhere in what we ship uses "*".
func TestNoRBACWildcards(t *testing.T) {
	var all []*unstructured.Unstructured
	for _, overlay := range overlays {
		all = append(all, render(t, filepath.Join("overlays", overlay))...)
	}
	all = append(all, readManifests(t, "startup-daemonset.yaml")...)
	all = append(all, readManifests(t, "examples/workload.yaml")...)
	roles := 0
	for _, u := range all {
		var rules []rbacv1.PolicyRule
		switch u.GetKind() {
		case "ClusterRole":
			rules = typed[rbacv1.ClusterRole](t, u).Rules
		case "Role":
			rules = typed[rbacv1.Role](t, u).Rules
		default:
			continue
		}
		roles++
		for i, r := range rules {
			for field, vals := range map[string][]string{"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups,
				"resourceNames": r.ResourceNames, "nonResourceURLs": r.NonResourceURLs} {
				for _, v := range vals {
					if strings.Contains(v, "*") {
						t.Errorf("%s %s rule %d: %s contains wildcard %q", u.GetKind(), u.GetName(), i, field, v)
					}
				}
			}
		}
	}
	if roles < 3 {
		t.Errorf("found %d roles; the wildcard check looked at nothing", roles)
	}
}

// TestConfigMapRollsDeployment: the gate's Config comes from a generated ConfigMap whose
// name carries a hash of its content; the Deployment mounts exactly that name and reads the
// file with --config, and the shipped file is a valid Config. A change of rules therefore
// changes the Pod template, and the Deployment rolls.
func TestConfigMapRollsDeployment(t *testing.T) {
	objs := render(t, "overlays/self-signed")
	cms := ofKind(objs, "ConfigMap")
	var cm *corev1.ConfigMap
	for _, u := range cms {
		if strings.HasPrefix(u.GetName(), "startupgate-config-") {
			cm = typed[corev1.ConfigMap](t, u)
		}
	}
	if cm == nil {
		t.Fatalf("no generated startupgate-config-<hash> ConfigMap among %d ConfigMaps", len(cms))
	}
	cfg, err := config.LoadConfig([]byte(cm.Data["config.yaml"]))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("the shipped config.yaml: %v", err)
	}
	d := mustGet[appsv1.Deployment](t, objs, "Deployment", "startupgate")
	pod := d.Spec.Template.Spec
	mounted := ""
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, "startupgate-config") {
			mounted = v.ConfigMap.Name
		}
	}
	if mounted != cm.Name {
		t.Errorf("the Deployment mounts ConfigMap %q, want the generated %q (else a change would not roll it)", mounted, cm.Name)
	}
	if !slices.Contains(pod.Containers[0].Args, "--config=/etc/startupgate/config.yaml") {
		t.Errorf("args %v do not read the mounted config", pod.Containers[0].Args)
	}
}

// TestPolicyOverlayMatchesConfig: the shipped policy.yaml is what the default config.Config
// renders, so it cannot drift from the webhook's mutation.
func TestPolicyOverlayMatchesConfig(t *testing.T) {
	cfg := defaultConfig(t)
	want, err := policy.For(&cfg)
	if err != nil || len(want) != 1 {
		t.Fatalf("the default config renders %d policies (%v), want 1", len(want), err)
	}
	wantPolicy, wantBinding := want[0].Policy, want[0].Binding
	objs := render(t, "overlays/policy")
	policies := ofKind(objs, "MutatingAdmissionPolicy")
	bindings := ofKind(objs, "MutatingAdmissionPolicyBinding")
	if len(policies) != 1 || len(bindings) != 1 {
		t.Fatalf("policy overlay renders %d policies and %d bindings, want 1 and 1", len(policies), len(bindings))
	}
	gotPolicy := typed[admissionregistrationv1.MutatingAdmissionPolicy](t, policies[0])
	gotBinding := typed[admissionregistrationv1.MutatingAdmissionPolicyBinding](t, bindings[0])
	if gotPolicy.Name != wantPolicy.Name || gotBinding.Name != wantBinding.Name {
		t.Errorf("names: policy %q binding %q, want %q and %q", gotPolicy.Name, gotBinding.Name, wantPolicy.Name, wantBinding.Name)
	}
	if diff := cmp.Diff(wantPolicy.Spec, gotPolicy.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("deploy/overlays/policy/policy.yaml is stale; run `make policy` (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBinding.Spec, gotBinding.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("policy binding is stale; run `make policy` (-want +got):\n%s", diff)
	}
}

// TestWebhookObjectSelectorMatchesConfig: the shipped webhook skips exactly the nodes the
// default config does not gate.
func TestWebhookObjectSelectorMatchesConfig(t *testing.T) {
	cfg := defaultConfig(t)
	want, err := policy.ObjectSelector(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	objs := readManifests(t, "base/webhook.yaml")
	if len(objs) != 1 {
		t.Fatalf("base/webhook.yaml holds %d objects, want 1 (the simulator loads it alone)", len(objs))
	}
	wh := typed[admissionregistrationv1.MutatingWebhookConfiguration](t, objs[0])
	for _, w := range wh.Webhooks {
		if diff := cmp.Diff(want, w.ObjectSelector, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("webhook %s objectSelector != policy.ObjectSelector(config.DefaultConfig()) (-want +got):\n%s", w.Name, diff)
		}
	}
}

// ---------------------------------------------------------------------------------------
// (3) Dockerfile and Makefile build the gate the same way.

var makeVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// makefileGateBuild returns the `make build` recipe line that builds the gate, with Make
// variables expanded.
func makefileGateBuild(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	assign := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$`)
	var inBuild bool
	var line string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		l := sc.Text()
		if m := assign.FindStringSubmatch(l); m != nil {
			vars[m[1]] = strings.TrimSpace(m[2])
			continue
		}
		if !strings.HasPrefix(l, "\t") {
			inBuild = strings.HasPrefix(l, "build:")
			continue
		}
		if inBuild && strings.Contains(l, "./cmd/gate") {
			if line != "" {
				t.Fatalf("Makefile build target builds ./cmd/gate twice")
			}
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		t.Fatalf("no recipe line building ./cmd/gate in the Makefile's build target")
	}
	for i := 0; i < 5 && makeVar.MatchString(line); i++ {
		line = makeVar.ReplaceAllStringFunc(line, func(s string) string { return vars[makeVar.FindStringSubmatch(s)[1]] })
	}
	return shellWords(t, line)
}

type dockerfile struct {
	from       []string
	user       string
	entrypoint string
	buildLines [][]string
	shell      bool
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var df dockerfile
	// Join continuation lines.
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			df.from = append(df.from, strings.Fields(rest)[0])
		case "USER":
			df.user = rest
		case "ENTRYPOINT":
			df.entrypoint = rest
		case "SHELL":
			df.shell = true
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/gate") {
				df.buildLines = append(df.buildLines, shellWords(t, rest))
			}
		}
	}
	return df
}

// shellWords splits a command line the way sh would for the simple quoting these files use.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// withoutOutput replaces the value of -o (where the binary goes differs by design).
func withoutOutput(words []string) ([]string, string) {
	out := slices.Clone(words)
	for i := range out {
		if out[i] == "-o" && i+1 < len(out) {
			o := out[i+1]
			out[i+1] = "OUT"
			return out, o
		}
	}
	return out, ""
}

func TestDockerfileMatchesMakefile(t *testing.T) {
	mk := makefileGateBuild(t)
	df := parseDockerfile(t)
	if len(df.buildLines) != 1 {
		t.Fatalf("Dockerfile has %d RUN lines building ./cmd/gate, want 1", len(df.buildLines))
	}
	mkWords, mkOut := withoutOutput(mk)
	dfWords, dfOut := withoutOutput(df.buildLines[0])
	if diff := cmp.Diff(mkWords, dfWords); diff != "" {
		t.Errorf("Dockerfile and `make build` build the gate differently (-make +docker):\n%s", diff)
	}
	if filepath.Base(mkOut) != "gate" || filepath.Base(dfOut) != "gate" {
		t.Errorf("-o %q (make) and %q (docker): both must produce a binary named gate", mkOut, dfOut)
	}

	// The builder's Go is the go.mod's language version; the final image is distroless,
	// non-root, shell-less, and runs the binary the Deployment's command names.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	if len(df.from) != 2 || df.from[0] != "golang:"+string(m[1]) {
		t.Errorf("FROM %v: want golang:%s then the runtime image", df.from, m[1])
	}
	if len(df.from) == 2 && df.from[1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("runtime image = %q, want gcr.io/distroless/static-debian12:nonroot", df.from[1])
	}
	if df.shell {
		t.Errorf("Dockerfile sets a SHELL; the runtime image has none")
	}
	d := mustGet[appsv1.Deployment](t, render(t, "overlays/self-signed"), "Deployment", "startupgate")
	uid := *d.Spec.Template.Spec.SecurityContext.RunAsUser
	gid := *d.Spec.Template.Spec.SecurityContext.RunAsGroup
	if want := fmt.Sprintf("%d:%d", uid, gid); df.user != want {
		t.Errorf("USER %q, want %q (the Deployment's runAsUser:runAsGroup)", df.user, want)
	}
	cmdJSON, _ := yaml.YAMLToJSON([]byte(df.entrypoint))
	var entry []string
	if err := yaml.Unmarshal(cmdJSON, &entry); err != nil || !slices.Equal(entry, d.Spec.Template.Spec.Containers[0].Command) {
		t.Errorf("ENTRYPOINT %s (exec form required) != Deployment command %v", df.entrypoint, d.Spec.Template.Spec.Containers[0].Command)
	}
	if len(entry) == 0 || filepath.Base(dfOut) != strings.TrimPrefix(entry[0], "/") {
		t.Errorf("ENTRYPOINT %v does not run the built binary %s", entry, dfOut)
	}
}

// ---------------------------------------------------------------------------------------
// (4) The kind demo: its cluster config decodes as kind's API and has the documented shape.

func TestKindCluster(t *testing.T) {
	raw, err := os.ReadFile("kind/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		t.Fatalf("kind/cluster.yaml: %v", err)
	}
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Errorf("kind/cluster.yaml is %s %s", c.APIVersion, c.Kind)
	}
	cfg := defaultConfig(t)
	var planes, system, gated int
	for _, n := range c.Nodes {
		switch n.Role {
		case kindv1alpha4.ControlPlaneRole:
			planes++
		case kindv1alpha4.WorkerRole:
			if cfg.Gated(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: n.Labels}}) {
				gated++
			} else {
				system++
			}
		}
	}
	if planes != 1 || system != 1 || gated != 3 {
		t.Errorf("kind cluster: %d control planes, %d system workers, %d gated workers; want 1, 1, 3", planes, system, gated)
	}
	out, err := exec.Command("bash", "-n", "kind/demo.sh").CombinedOutput()
	if err != nil {
		t.Errorf("bash -n kind/demo.sh: %v\n%s", err, out)
	}
}

// ---------------------------------------------------------------------------------------
// (a) Every overlay applies to a real apiserver (dry run, then for real).

// applyAll server-side applies objs in order, each first with DryRun All, then for real.
// It returns the objects applied and the error of each one that failed.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, map[*unstructured.Unstructured]error) {
	var applied []*unstructured.Unstructured
	failed := map[*unstructured.Unstructured]error{}
	for _, o := range objs {
		if err := apply(ctx, c, o, client.DryRunAll); err != nil {
			failed[o] = fmt.Errorf("dry run: %w", err)
			continue
		}
		if err := apply(ctx, c, o); err != nil {
			failed[o] = err
			continue
		}
		applied = append(applied, o)
	}
	return applied, failed
}

func apply(ctx context.Context, c client.Client, o *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(fieldOwner), client.ForceOwnership)
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...)
}

func describe(o client.Object) string {
	gvk := o.GetObjectKind().GroupVersionKind()
	if o.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", gvk.Kind, o.GetNamespace(), o.GetName())
	}
	return fmt.Sprintf("%s %s", gvk.Kind, o.GetName())
}

// deleteAll deletes objs (last first) and waits until they are gone. Pods in the gate's
// namespace are force-deleted: without a kubelet a bound Pod would never finish
// terminating, and the namespace with it.
func deleteAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := len(objs) - 1; i >= 0; i-- {
		err := c.Delete(ctx, objs[i].DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			t.Errorf("deleting %s: %v", describe(objs[i]), err)
		}
	}
	err := wait(ctx, 3*time.Minute, func() error {
		_ = c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(gateNamespace), client.GracePeriodSeconds(0))
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(o), got)
			if err == nil {
				return fmt.Errorf("%s still exists", describe(o))
			}
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("waiting for deletion: %v", err)
	}
}

// wait polls f until it returns nil or the timeout passes, and returns f's last error.
func wait(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probeNode is a Node that a dry-run CREATE sends through admission.
func probeNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestOverlaysApply(t *testing.T) {
	c := adminClient(t)
	cfg := defaultConfig(t)
	for _, src := range sources {
		for _, overlay := range overlays {
			t.Run(src.name+"/"+overlay, func(t *testing.T) { checkApply(t, c, &cfg, src.render(t, overlay), overlay) })
		}
	}
}

// checkApply applies an overlay's objects, as rendered by one source, to the plane.
func checkApply(t *testing.T, c client.Client, cfg *config.Config, objs []*unstructured.Unstructured, overlay string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(func() { deleteAll(t, c, objs) })

	// Apply in kustomize's order, but take each webhook configuration out again as
	// soon as it has been checked: it points at a Service with no endpoints and, for
	// Nodes, fails closed — left in place it would block every later Node CREATE.
	var applied []*unstructured.Unstructured
	failed := map[*unstructured.Unstructured]error{}
	for _, o := range objs {
		a, f := applyAll(ctx, c, []*unstructured.Unstructured{o})
		applied = append(applied, a...)
		for k, v := range f {
			failed[k] = v
		}
		if len(a) == 0 {
			continue
		}
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			checkWebhookFailsClosed(ctx, t, c, cfg)
			deleteNow(ctx, t, c, o)
		case "ValidatingWebhookConfiguration":
			deleteNow(ctx, t, c, o)
		}
	}

	for o, err := range failed {
		if overlay == "cert-manager" && o.GroupVersionKind().Group == certManagerGroup && meta.IsNoMatchError(err) {
			continue // no cert-manager CRDs on this plane
		}
		t.Errorf("applying %s: %v", describe(o), err)
	}
	if overlay == "cert-manager" {
		var cm []string
		for o := range failed {
			cm = append(cm, o.GetKind())
		}
		slices.Sort(cm)
		if !slices.Equal(cm, []string{"Certificate", "Issuer"}) {
			t.Errorf("cert-manager overlay: failed kinds %v, want exactly the cert-manager.io Certificate and Issuer", cm)
		}
	}
	// Everything applied (webhook configurations aside, deleted above) is stored.
	for _, o := range applied {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Errorf("reading back %s: %v", describe(o), err)
		}
	}
	if overlay == "policy" {
		checkPolicyTaints(ctx, t, c, cfg)
	}
}

func deleteNow(ctx context.Context, t *testing.T, c client.Client, o *unstructured.Unstructured) {
	t.Helper()
	if err := c.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", describe(o), err)
	}
}

// checkWebhookFailsClosed proves on the real apiserver what the webhook comment claims:
// with no gate Pod to answer, a gated Node cannot register (failurePolicy Fail), while
// the system and control-plane nodes the gate itself runs on still can (objectSelector).
func checkWebhookFailsClosed(ctx context.Context, t *testing.T, c client.Client, cfg *config.Config) {
	t.Helper()
	dry := client.DryRunAll
	err := wait(ctx, 15*time.Second, func() error {
		err := c.Create(ctx, probeNode("probe-gated", nil), dry)
		if err == nil {
			return errors.New("a gated Node registered although the webhook cannot be reached")
		}
		if !strings.Contains(err.Error(), "node-startup-taint.startup.k8s.io") {
			return fmt.Errorf("unexpected error: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("failurePolicy Fail: %v", err)
	}
	for _, labels := range []map[string]string{
		{"kubernetes.azure.com/mode": "system"},
		{"node-role.kubernetes.io/control-plane": ""},
	} {
		n := probeNode("probe-skipped", labels)
		if cfg.Gated(n) {
			t.Fatalf("probe %v is gated by the default config", labels)
		}
		if err := c.Create(ctx, n, dry); err != nil {
			t.Errorf("node with %v must register while the webhook is down (objectSelector): %v", labels, err)
		}
	}
}

// checkPolicyTaints proves that the shipped policy really adds the taint inside the
// apiserver, and skips system nodes.
func checkPolicyTaints(ctx context.Context, t *testing.T, c client.Client, cfg *config.Config) {
	t.Helper()
	err := wait(ctx, 20*time.Second, func() error {
		n := probeNode("probe-policy", nil)
		if err := c.Create(ctx, n, client.DryRunAll); err != nil {
			return err
		}
		if !cfg.HasTaint(n) {
			return fmt.Errorf("node admitted without the startup taint: %v", n.Spec.Taints)
		}
		return nil
	})
	if err != nil {
		t.Errorf("MutatingAdmissionPolicy from the policy overlay: %v", err)
	}
	sys := probeNode("probe-policy-system", map[string]string{"kubernetes.azure.com/mode": "system"})
	if err := c.Create(ctx, sys, client.DryRunAll); err != nil || cfg.HasTaint(sys) {
		t.Errorf("system node: err %v, taints %v; want admitted untainted", err, sys.Spec.Taints)
	}
}

// ---------------------------------------------------------------------------------------
// (e) deploy/README.md's self-signed install, step by step, as far as a plane without a
// kubelet allows. The last step of the walk-through — a new node registers tainted and is
// released once its init Pod is ready, by the gate running under the deployed
// ServiceAccount's RBAC — is TestGateUnderDeployedRBAC/basic-join; the gate's Pods
// cannot run here.

func TestREADMEInstall(t *testing.T) {
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

	// README: "Re-applying the kustomization keeps the caBundle".
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
		if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) || !cfg.CacheSelector().Matches(labels.Set(ds.Spec.Template.Labels)) {
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

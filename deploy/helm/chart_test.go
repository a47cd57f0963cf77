package helm_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
)

// TestChartLints: the SDK's `helm lint --strict` finds nothing above INFO, for every install.
// It calls the linter that `helm lint` (the SDK's action.Lint) runs, without the action
// package: that package brings in the whole client (a WebAssembly runtime for plugins, OCI
// registries, an SQL storage driver), about 370 more packages to build for one test.
func TestChartLints(t *testing.T) {
	for _, in := range installs {
		t.Run(in.overlay, func(t *testing.T) {
			res := lint.RunAll(chartDir, in.values, namespace, lint.WithKubeVersion(&kubeVersion))
			for _, m := range res.Messages {
				// --strict: a warning fails as an error does.
				if m.Severity > support.InfoSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

// TestBadValuesFailInstall: a bad value is a clear error at install, naming what is wrong,
// through values.schema.json or, for combinations a schema cannot express, `fail`.
func TestBadValuesFailInstall(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"unknown mode":           {map[string]any{"mode": "both"}, "mode"},
		"failure policy case":    {map[string]any{"failurePolicy": "fail"}, "failurePolicy"},
		"no replicas":            {map[string]any{"replicas": 0}, "replicas"},
		"typo at top level":      {map[string]any{"replica": 2}, "replica"},
		"image tag not a string": {map[string]any{"image": map[string]any{"tag": 5}}, "tag"},
		"certificate mode":       {map[string]any{"certificates": map[string]any{"mode": "vault"}}, "mode"},
		"pod guard policy":       {map[string]any{"podGuard": map[string]any{"failurePolicy": "Never"}}, "failurePolicy"},
		"webhook timeout":        {map[string]any{"webhook": map[string]any{"timeoutSeconds": 60}}, "timeoutSeconds"},
		"pod guard in policy mode": {map[string]any{"mode": "policy", "podGuard": map[string]any{"enabled": true}},
			"podGuard.enabled needs mode webhook"},
		"pdb blocks drains": {map[string]any{"replicas": 1}, "pdb.minAvailable must be below replicas"},
		"pdb set as int64":  {map[string]any{"pdb": map[string]any{"minAvailable": int64(2)}}, "pdb.minAvailable must be below replicas"},
		"rules in policy mode": {map[string]any{"mode": "policy", "config": map[string]any{"rules": []any{}}},
			"pass `gate --print-policy --config F` as policyManifest"},
		"instance in policy mode": {map[string]any{"mode": "policy", "config": map[string]any{"instance": "blue"}},
			"mode policy with config.instance"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderFiles(t, tc.values, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rendering with %v: error %v, want one that mentions %q", tc.values, err, tc.want)
			}
		})
	}
}

// TestRulesRollDeployment: the rules given as values are the ConfigMap's config.yaml, and a
// change of rules is a ConfigMap of another name, which the Deployment and the uninstall Job
// mount, and changes the Pod template (checksum/config), so the Deployment rolls, and
// the rules' taints join its tolerations; the rest of the Deployment stays as it was.
func TestRulesRollDeployment(t *testing.T) {
	var rules map[string]any
	if err := yaml.Unmarshal(readFile(t, "../examples/rules.yaml"), &rules); err != nil {
		t.Fatal(err)
	}
	before := renderChart(t, nil, nil)
	after := renderChart(t, map[string]any{"config": rules}, nil)

	cm := configMap(t, after)
	if configMap(t, before).GetName() == cm.GetName() {
		t.Errorf("ConfigMap %s for two configs: its name must follow its content, so that the old Pods keep theirs", cm.GetName())
	}
	for _, o := range []*unstructured.Unstructured{mustFind(t, after, "Deployment", "startupgate"), mustFind(t, after, "Job", "startupgate-release-nodes")} {
		vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		if raw, _ := json.Marshal(vols); !strings.Contains(string(raw), `"name":"`+cm.GetName()+`"`) {
			t.Errorf("%s %s does not mount ConfigMap %s: %s", o.GetKind(), o.GetName(), cm.GetName(), raw)
		}
	}
	got, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	var gotRules map[string]any
	if err := yaml.Unmarshal([]byte(got), &gotRules); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(rules)
	want["exclude"] = []any{ // the chart's default exclude, which it writes into the config
		map[string]any{"key": "kubernetes.azure.com/mode", "operator": "In", "values": []any{"system"}},
		map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
	}
	if diff := cmp.Diff(want, gotRules); diff != "" {
		t.Errorf("ConfigMap config.yaml is not deploy/examples/rules.yaml with the chart's exclude (-want +got):\n%s", diff)
	}

	d0 := mustFind(t, before, "Deployment", "startupgate")
	d1 := mustFind(t, after, "Deployment", "startupgate")
	sum0 := d0.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)[checksumAnnotation]
	sum1 := d1.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)[checksumAnnotation]
	if sum0 == nil || sum0 == sum1 {
		t.Errorf("checksum/config %v -> %v: a change of rules must change the Pod template", sum0, sum1)
	}
	// The rules' taints join the tolerations (TestTolerationsFromConfig checks which).
	tol0, _, _ := unstructured.NestedSlice(d0.Object, "spec", "template", "spec", "tolerations")
	tol1, _, _ := unstructured.NestedSlice(d1.Object, "spec", "template", "spec", "tolerations")
	if len(tol1) <= len(tol0) {
		t.Errorf("the rules' taints did not join the tolerations: %v -> %v", tol0, tol1)
	}
	unstructured.RemoveNestedField(d0.Object, "spec", "template", "spec", "tolerations")
	unstructured.RemoveNestedField(d1.Object, "spec", "template", "spec", "tolerations")
	if diff := cmp.Diff(normalize(t, d0), normalize(t, d1)); diff != "" {
		t.Errorf("a change of rules changed more of the Deployment than its checksum and tolerations (-before +after):\n%s", diff)
	}
}

// TestSelfSignedCertificate: the generated pair serves the webhook Service's name, the
// webhooks trust its CA, and `helm upgrade` (which sees the existing Secret through
// `lookup`) keeps the pair instead of rotating it under the running Pods.
func TestSelfSignedCertificate(t *testing.T) {
	podGuard := map[string]any{"podGuard": map[string]any{"enabled": true}, "certificates": map[string]any{"mode": "selfSigned"}}
	first := renderChart(t, podGuard, nil)
	secret := mustFind(t, first, "Secret", "startupgate-webhook-tls")
	data := secretData(t, secret)
	checkServingPair(t, data, "startupgate-webhook.startupgate-system.svc")
	for _, wh := range []string{"MutatingWebhookConfiguration/startupgate", "ValidatingWebhookConfiguration/startupgate-pod-guard"} {
		kind, name, _ := strings.Cut(wh, "/")
		if got := caBundles(t, mustFind(t, first, kind, name)); len(got) != 1 || got[0] != string(data["ca.crt"]) {
			t.Errorf("%s caBundle is not the generated ca.crt", wh)
		}
	}

	// A fresh install generates a new pair; only lookup keeps the old one.
	if again := secretData(t, mustFind(t, renderChart(t, podGuard, nil), "Secret", "startupgate-webhook-tls")); string(again["tls.crt"]) == string(data["tls.crt"]) {
		t.Fatalf("two installs generated the same certificate: the upgrade check below would prove nothing")
	}
	upgraded := renderChart(t, podGuard, existing{secret})
	if diff := cmp.Diff(secret.Object["data"], mustFind(t, upgraded, "Secret", "startupgate-webhook-tls").Object["data"]); diff != "" {
		t.Errorf("helm upgrade replaced the serving certificate (-installed +upgraded):\n%s", diff)
	}
	if got := caBundles(t, mustFind(t, upgraded, "MutatingWebhookConfiguration", "startupgate")); got[0] != string(data["ca.crt"]) {
		t.Errorf("helm upgrade changed the webhook caBundle")
	}
}

// existing answers the chart's `lookup` with the objects of a previous install, as the
// apiserver would on `helm upgrade`.
type existing []*unstructured.Unstructured

func (e existing) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	var objs []runtime.Object
	for _, o := range e {
		objs = append(objs, o.DeepCopy())
	}
	gvr := gv.WithResource(strings.ToLower(kind) + "s")
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: kind + "List"}, objs...)
	return c.Resource(gvr), true, nil
}

func secretData(t *testing.T, u *unstructured.Unstructured) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", s.Type, corev1.SecretTypeTLS)
	}
	return s.Data
}

// caBundles returns each webhook's caBundle, decoded.
func caBundles(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		b64, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
		ca, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("%s caBundle: %v", u.GetName(), err)
		}
		out = append(out, string(ca))
	}
	return out
}

// checkServingPair: tls.key is tls.crt's key, and tls.crt chains to ca.crt for dnsName.
func checkServingPair(t *testing.T, data map[string][]byte, dnsName string) {
	t.Helper()
	pair, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatalf("ca.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for %s: %v", dnsName, err)
	}
	if block, _ := pem.Decode(data["ca.crt"]); block == nil || block.Type != "CERTIFICATE" {
		t.Errorf("ca.crt is not a PEM certificate")
	}
}

// TestServiceMonitor: with metrics.serviceMonitor.enabled the chart scrapes the metrics
// Service: its selector selects that Service, and its port is the Service's port name.
func TestServiceMonitor(t *testing.T) {
	if objs := renderChart(t, nil, nil); find(objs, "ServiceMonitor", "startupgate") != nil {
		t.Errorf("ServiceMonitor rendered while metrics.serviceMonitor.enabled is false")
	}
	objs := renderChart(t, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "15s"}}}, nil)
	sm := mustFind(t, objs, "ServiceMonitor", "startupgate")
	svc := mustFind(t, objs, "Service", "startupgate-metrics")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	labels := svc.GetLabels()
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not select Service %s (labels %v)", k, v, svc.GetName(), labels)
		}
	}
	if other := mustFind(t, objs, "Service", "startupgate-webhook").GetLabels(); other["app.kubernetes.io/component"] == sel["app.kubernetes.io/component"] {
		t.Errorf("ServiceMonitor also selects the webhook Service")
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] || endpoints[0].(map[string]any)["interval"] != "15s" {
		t.Errorf("ServiceMonitor endpoints %v, want the Service's port %v every 15s", endpoints, ports)
	}
}

// TestNotes: NOTES.txt tells the operator how to see the held nodes.
func TestNotes(t *testing.T) {
	files, err := renderFiles(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := files["startupgate/templates/NOTES.txt"]
	for _, want := range []string{"gate status", "kubectl startupgate status", "gate release --all", "rollout status deploy/startupgate"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

// TestCertManagerCA: under cert-manager the serving certificate is signed by a CA of the
// chart's own (a self-signed Issuer signs it), so the caBundle the cainjector writes is the
// CA and outlives the serving certificate's rotation; certificates.certManager.issuerRef
// signs it with the operator's issuer instead, and the chart then makes no issuer at all.
func TestCertManagerCA(t *testing.T) {
	certManager := func(issuerRef map[string]any) map[string]any {
		return map[string]any{"certificates": map[string]any{"mode": "certManager", "certManager": map[string]any{"issuerRef": issuerRef}}}
	}
	issuerOf := func(cert *unstructured.Unstructured) map[string]any {
		ref, _, _ := unstructured.NestedMap(cert.Object, "spec", "issuerRef")
		return ref
	}
	objs := renderChart(t, certManager(nil), nil)
	serving := mustFind(t, objs, "Certificate", "startupgate-webhook")
	caIssuer := mustFind(t, objs, "Issuer", issuerOf(serving)["name"].(string))
	caSecret, _, _ := unstructured.NestedString(caIssuer.Object, "spec", "ca", "secretName")
	var ca *unstructured.Unstructured
	for _, o := range objs {
		if s, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); o.GetKind() == "Certificate" && s == caSecret {
			ca = o
		}
	}
	if ca == nil {
		t.Fatalf("no Certificate makes the Secret %q that the serving certificate's issuer %s signs with", caSecret, caIssuer.GetName())
	}
	if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
		t.Errorf("Certificate %s, whose Secret issuer %s signs with, is not a CA", ca.GetName(), caIssuer.GetName())
	}
	if self, _, _ := unstructured.NestedMap(mustFind(t, objs, "Issuer", issuerOf(ca)["name"].(string)).Object, "spec", "selfSigned"); self == nil {
		t.Errorf("the CA %s is not signed by a self-signed Issuer", ca.GetName())
	}

	ref := map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
	objs = renderChart(t, certManager(ref), nil)
	if got := issuerOf(mustFind(t, objs, "Certificate", "startupgate-webhook")); !reflect.DeepEqual(got, ref) {
		t.Errorf("serving certificate's issuerRef %v, want %v", got, ref)
	}
	for _, o := range objs {
		if o.GetKind() == "Issuer" || o.GetKind() == "Certificate" && o.GetName() != "startupgate-webhook" {
			t.Errorf("with an issuerRef the chart still renders %s %s", o.GetKind(), o.GetName())
		}
	}
	if _, err := renderFiles(t, certManager(map[string]any{"kind": "ClusterIssuer"}), nil); err == nil {
		t.Error("an issuerRef with a kind and no name rendered; want the schema to refuse it")
	}
}

// TestGateCertificates: with certificates.mode gate, the default, nothing is generated at render time, so
// `helm template` renders the same manifests every time (GitOps syncs change nothing); the
// gate is told where its CA lives, which Service it serves and which configurations' caBundle
// it keeps, mints into a writable volume, and may touch exactly those objects.
func TestGateCertificates(t *testing.T) {
	vals := map[string]any{"podGuard": map[string]any{"enabled": true}} // the default mode
	first, second := renderChart(t, vals, nil), renderChart(t, vals, nil)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("two renders differ (-first +second):\n%s", diff)
	}
	for _, wh := range []string{"MutatingWebhookConfiguration/startupgate", "ValidatingWebhookConfiguration/startupgate-pod-guard"} {
		kind, name, _ := strings.Cut(wh, "/")
		o := mustFind(t, first, kind, name)
		if got := caBundles(t, o); slices.ContainsFunc(got, func(b string) bool { return b != "" }) {
			t.Errorf("%s renders a caBundle; the gate writes it", wh)
		}
		if _, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
			t.Errorf("%s asks cert-manager for its caBundle", wh)
		}
		// The gate keeps the caBundle only where this names its --cert-secret (gate/certs).
		if got := o.GetAnnotations()["startup.k8s.io/inject-ca-from"]; got != "startupgate-system/startupgate-webhook-ca" {
			t.Errorf("%s: annotation startup.k8s.io/inject-ca-from %q, want the gate's CA Secret", wh, got)
		}
	}
	for _, o := range first {
		if o.GetKind() == "Secret" || o.GetAPIVersion() == "cert-manager.io/v1" {
			t.Errorf("renders %s %s; the gate makes its own", o.GetKind(), o.GetName())
		}
	}
	d := mustFind(t, first, "Deployment", "startupgate")
	raw, _ := json.Marshal(d.Object)
	for _, want := range []string{`"--cert-secret=startupgate-webhook-ca"`, `"--webhook-service=startupgate-system/startupgate-webhook"`,
		`"--webhook-configurations=mutating/startupgate,validating/startupgate-pod-guard"`, `"emptyDir":{"medium":"Memory"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the Deployment lacks %s", want)
		}
	}
	role, _ := json.Marshal(mustFind(t, first, "Role", "startupgate-webhook-ca").Object["rules"])
	cluster, _ := json.Marshal(mustFind(t, first, "ClusterRole", "startupgate-webhook-ca").Object["rules"])
	for _, want := range []string{`"resourceNames":["startupgate-webhook-ca"],"resources":["secrets"],"verbs":["get"]`, `"resources":["secrets"],"verbs":["create"]`} {
		if !strings.Contains(string(role), want) {
			t.Errorf("Role rules %s lack %s", role, want)
		}
	}
	for _, want := range []string{`"resourceNames":["startupgate"],"resources":["mutatingwebhookconfigurations"],"verbs":["get","update"]`,
		`"resourceNames":["startupgate-pod-guard"],"resources":["validatingwebhookconfigurations"],"verbs":["get","update"]`} {
		if !strings.Contains(string(cluster), want) {
			t.Errorf("ClusterRole rules %s lack %s", cluster, want)
		}
	}
	for _, o := range renderChart(t, map[string]any{"certificates": map[string]any{"mode": "selfSigned"}}, nil) {
		if strings.HasSuffix(o.GetName(), "-webhook-ca") {
			t.Errorf("mode selfSigned renders %s %s, which only mode gate needs", o.GetKind(), o.GetName())
		}
		if _, ok := o.GetAnnotations()["startup.k8s.io/inject-ca-from"]; ok {
			t.Errorf("mode selfSigned annotates %s %s for the gate to keep its caBundle", o.GetKind(), o.GetName())
		}
	}
}

// TestPodGuardTimeout: the apiserver allows what the Pod guard has not answered within the
// webhook's timeoutSeconds (failurePolicy Ignore), so the gate is told that timeout and
// answers within it; the two come from one value.
func TestPodGuardTimeout(t *testing.T) {
	objs := renderChart(t, map[string]any{"podGuard": map[string]any{"enabled": true, "timeoutSeconds": 7}}, nil)
	vwc, _ := json.Marshal(mustFind(t, objs, "ValidatingWebhookConfiguration", "startupgate-pod-guard").Object)
	if !strings.Contains(string(vwc), `"timeoutSeconds":7`) {
		t.Errorf("the Pod guard's webhook lacks timeoutSeconds 7: %s", vwc)
	}
	d, _ := json.Marshal(mustFind(t, objs, "Deployment", "startupgate").Object)
	if !strings.Contains(string(d), `"--pod-guard-timeout=7s"`) {
		t.Errorf("the Deployment lacks --pod-guard-timeout=7s")
	}
}

// TestReplaceGrants: the Karpenter grants of timeoutPolicy replace render exactly when a rule
// of config (or the top-level default rule) uses it, and are the kustomize overlay's.
func TestReplaceGrants(t *testing.T) {
	rule := func(policy string) map[string]any {
		return map[string]any{"name": "gpu", "taint": map[string]any{"key": "example.com/gpu", "effect": "NoSchedule"},
			"components": []any{map[string]any{"selector": "app=gpu"}}, "maxHold": "10m", "timeoutPolicy": policy}
	}
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   bool
	}{
		{"defaults", nil, false},
		{"a keep rule", map[string]any{"rules": []any{rule("keep")}}, false},
		{"a replace rule among others", map[string]any{"rules": []any{rule("keep"), rule("replace")}}, true},
		{"the default rule replaces", map[string]any{"maxHold": "10m", "timeoutPolicy": "replace"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			if tc.config != nil {
				vals["config"] = tc.config
			}
			objs := renderChart(t, vals, nil)
			role := find(objs, "ClusterRole", "startupgate-replace")
			if got := role != nil && find(objs, "ClusterRoleBinding", "startupgate-replace") != nil; got != tc.want {
				t.Fatalf("replace grants rendered: %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			raw, err := os.ReadFile("../overlays/replace/rbac-replace.yaml")
			if err != nil {
				t.Fatal(err)
			}
			overlay := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(strings.SplitN(string(raw), "\n---\n", 2)[0]), &overlay.Object); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(overlay.Object["rules"], role.Object["rules"]); diff != "" {
				t.Errorf("the chart's replace grants differ from deploy/overlays/replace's (-overlay +chart):\n%s", diff)
			}
		})
	}
}

// TestPolicyFollowsConfigKeys: in mode policy, the chart's MutatingAdmissionPolicy is what
// `gate --print-policy` makes of the same config (policy.For): the config's taint (its
// fields left out keep their defaults, as the gate decodes them) and its completion and
// placed annotations. The match conditions and the mutation are compared; the object
// selector is the chart's exclude.
func TestPolicyFollowsConfigKeys(t *testing.T) {
	for name, cfg := range map[string]map[string]any{
		"the default":    {},
		"a key":          {"taint": map[string]any{"key": "example.com/warming"}},
		"every field":    {"taint": map[string]any{"key": "example.com/warming", "value": "", "effect": "NoExecute"}},
		"the records":    {"completedAnnotation": "example.com/done", "placedAnnotation": "example.com/placed"},
		"a value alone":  {"taint": map[string]any{"value": "cold"}},
		"an effect only": {"taint": map[string]any{"effect": "PreferNoSchedule"}},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.LoadConfig(raw)
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				t.Fatal(err)
			}
			objs, err := policy.For(&c)
			if err != nil {
				t.Fatal(err)
			}
			want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&objs[0].Policy.Spec)
			if err != nil {
				t.Fatal(err)
			}
			got := mustFind(t, renderChart(t, map[string]any{"mode": "policy", "config": cfg}, nil), "MutatingAdmissionPolicy", policy.Name)
			for _, field := range []string{"matchConditions", "mutations", "reinvocationPolicy"} {
				g, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", field)
				if diff := cmp.Diff(want[field], g); diff != "" {
					t.Errorf("spec.%s differs from gate --print-policy (-gate +chart):\n%s", field, diff)
				}
			}
		})
	}
}

package helm_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The differences between the chart and the kustomize install that the comparison allows.
// Everything else, every field of every object, must be equal.
var (
	// helmLabels are Helm's standard labels. Metadata labels are not compared at all (nothing
	// in the cluster acts on them); in selectors and Pod template labels, which do act, only
	// these are dropped. The chart adds the instance label to its selectors so that two
	// releases never select each other's Pods.
	helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}
	// checksumAnnotation rolls the Deployment on a change of config; kustomize does the same
	// with the hash suffix of the ConfigMap's name.
	checksumAnnotation = "checksum/config"
	// generatedName is that hash suffix of kustomize's configMapGenerator.
	generatedName = regexp.MustCompile(`^(startupgate-config)-[a-z0-9]{10}$`)
	// chartOnly are objects only the chart renders: the self-signed serving certificate,
	// which generate-certs.sh creates for the kustomize install.
	// And the Job helm uninstall runs first, to release the held nodes (a hook: Helm runs
	// it; for kustomize, operations.md says to run `gate release --all`).
	chartOnly = []string{"Secret startupgate-system/startupgate-webhook-tls", "Job startupgate-system/startupgate-release-nodes"}
	// Not compared at all: the PrometheusRule and the Grafana dashboard ConfigMap
	// (alerts.enabled, dashboard.enabled) are Helm-only and off in every install here. They
	// need prometheus-operator's CRD and a Grafana sidecar, which the kustomize base does not
	// assume; alerts_test.go renders and tests them.
	// kustomizeOnly are objects only the base renders: the Namespace, which Helm creates
	// (helm install --create-namespace) and does not own.
	kustomizeOnly = []string{"Namespace /startupgate-system"}
)

// TestChartMatchesKustomize renders the chart for each install and proves it equal to
// `kustomize build` of the matching overlay: RBAC rules, webhook and policy objects (rules,
// failure policy, match conditions, timeouts), the Deployment (args, env, probes, security
// context), Services, the PDB, the config. It also keeps testdata/OVERLAY.yaml, the rendered
// chart that deploy/deploy_test.go applies to a real apiserver, in step with the chart.
func TestChartMatchesKustomize(t *testing.T) {
	for _, in := range installs {
		t.Run(in.overlay, func(t *testing.T) {
			chartObjs := renderChart(t, in.values, nil)
			if diff := compare(t, buildOverlay(t, in.overlay), chartObjs); diff != "" {
				t.Errorf("chart with %v differs from deploy/overlays/%s (-kustomize +chart):\n%s", in.values, in.overlay, diff)
			}
			checkGolden(t, filepath.Join("testdata", in.overlay+".yaml"), chartObjs)
		})
	}
}

// TestCompareCatchesDrift: a change on one side only — the kind of drift that lets nodes
// join untainted or the gate lose a permission — makes compare report a difference.
func TestCompareCatchesDrift(t *testing.T) {
	drifts := map[string]struct {
		overlay string
		kind    string
		name    string
		path    []string
		value   any
	}{
		"webhook failure policy": {"self-signed", "MutatingWebhookConfiguration", "startupgate", nil, "Ignore"},
		"policy failure policy":  {"policy", "MutatingAdmissionPolicy", "startupgate-node-taint", []string{"spec", "failurePolicy"}, "Ignore"},
		"role verbs":             {"self-signed", "Role", "startupgate-leader-election", nil, []any{"get"}},
		"deployment replicas":    {"self-signed", "Deployment", "startupgate", []string{"spec", "replicas"}, int64(1)},
		"pdb":                    {"self-signed", "PodDisruptionBudget", "startupgate", []string{"spec", "minAvailable"}, int64(0)},
		"config":                 {"self-signed", "ConfigMap", "", []string{"data", "config.yaml"}, "rules: []"},
	}
	for name, d := range drifts {
		t.Run(name, func(t *testing.T) {
			in := installs[slices.IndexFunc(installs, func(i install) bool { return i.overlay == d.overlay })]
			kust := buildOverlay(t, d.overlay)
			o := findDrifted(t, kust, d.kind, d.name)
			switch d.kind {
			case "MutatingWebhookConfiguration":
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				hooks[0].(map[string]any)["failurePolicy"] = d.value
				_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
			case "Role":
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				rules[0].(map[string]any)["verbs"] = d.value
				_ = unstructured.SetNestedSlice(o.Object, rules, "rules")
			default:
				if err := unstructured.SetNestedField(o.Object, d.value, d.path...); err != nil {
					t.Fatal(err)
				}
			}
			if diff := compare(t, kust, renderChart(t, in.values, nil)); diff == "" {
				t.Errorf("compare found no difference after changing %s on the kustomize side", name)
			}
		})
	}
}

// findDrifted finds the object to change; an empty name means the only object of kind.
func findDrifted(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	t.Fatalf("no %s %q", kind, name)
	return nil
}

// compare returns the difference between the kustomize and the chart objects, after the
// allowed differences above are taken out ("" if none).
func compare(t *testing.T, kust, chartObjs []*unstructured.Unstructured) string {
	t.Helper()
	return cmp.Diff(normalizeAll(t, kust, kustomizeOnly), normalizeAll(t, chartObjs, chartOnly))
}

func normalizeAll(t *testing.T, objs []*unstructured.Unstructured, only []string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		n := normalize(t, o)
		k := key(&unstructured.Unstructured{Object: n})
		if slices.Contains(only, k) {
			continue
		}
		if _, dup := out[k]; dup {
			t.Fatalf("%s rendered twice", k)
		}
		out[k] = n
	}
	return out
}

// normalize returns a copy of o with the allowed differences taken out.
func normalize(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	obj := o.DeepCopy().Object
	meta := map[string]any{"name": generatedName.ReplaceAllString(o.GetName(), "$1")}
	if ns := o.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if a := o.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = toAny(a)
	}
	obj["metadata"] = meta
	unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "annotations", checksumAnnotation)
	if a, _, _ := unstructured.NestedMap(obj, "spec", "template", "metadata", "annotations"); len(a) == 0 {
		unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "annotations")
	}
	if hooks, ok, _ := unstructured.NestedSlice(obj, "webhooks"); ok {
		for _, h := range hooks {
			// Generated per install (chart) or injected after it (generate-certs.sh, cainjector).
			unstructured.RemoveNestedField(h.(map[string]any), "clientConfig", "caBundle")
		}
		_ = unstructured.SetNestedSlice(obj, hooks, "webhooks")
	}
	if o.GetKind() == "ConfigMap" {
		parseData(t, obj)
	}
	walk(obj, dropHelmLabels)
	return obj
}

// parseData compares the config by what the gate reads, not by its comments and layout.
func parseData(t *testing.T, obj map[string]any) {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(obj, "data")
	parsed := map[string]any{}
	for k, v := range data {
		var val any
		if err := yaml.Unmarshal([]byte(v), &val); err != nil {
			t.Fatalf("ConfigMap data %s: %v", k, err)
		}
		parsed[k] = val
	}
	obj["data"] = parsed
}

// dropHelmLabels takes Helm's labels out of every label map and selector, and the hash out
// of a reference to the generated ConfigMap.
func dropHelmLabels(k string, m map[string]any) {
	switch k {
	case "labels", "matchLabels", "selector":
		for _, l := range helmLabels {
			delete(m, l)
		}
	case "configMap":
		if n, ok := m["name"].(string); ok {
			m["name"] = generatedName.ReplaceAllString(n, "$1")
		}
	}
}

// walk calls f on every map in v, with the key it is found under.
func walk(v any, f func(key string, m map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if m, ok := c.(map[string]any); ok {
				f(k, m)
			}
			walk(c, f)
		}
	case []any:
		for _, c := range v {
			walk(c, f)
		}
	}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// placeholder stands in the golden files for what the chart generates anew at each install
// (the self-signed pair), so that the files are stable. The apiserver stores it as is.
var placeholder = base64.StdEncoding.EncodeToString([]byte("generated by the chart at install"))

// checkGolden compares the rendered chart with testdata/OVERLAY.yaml, or rewrites it with
// -update.
func checkGolden(t *testing.T, path string, objs []*unstructured.Unstructured) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The chart rendered by deploy/helm/equal_test.go for this overlay's values; rewrite with\n" +
		"#   cd deploy/helm && go test -run TestChartMatchesKustomize -update\n" +
		"# deploy/deploy_test.go applies it to a real apiserver. Generated certificates are placeholders.\n")
	for _, o := range objs {
		y, err := yaml.Marshal(masked(o).Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(string(readFile(t, path)), b.String()); diff != "" {
		t.Errorf("%s is stale; rewrite it with `go test -run TestChartMatchesKustomize -update` in deploy/helm (-file +chart):\n%s", path, diff)
	}
}

// masked replaces the generated certificate in the Secret and the caBundles.
func masked(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	if o.GetKind() == "Secret" {
		for k := range o.Object["data"].(map[string]any) {
			o.Object["data"].(map[string]any)[k] = placeholder
		}
	}
	if hooks, ok, _ := unstructured.NestedSlice(o.Object, "webhooks"); ok {
		for _, h := range hooks {
			if _, ok, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle"); ok {
				_ = unstructured.SetNestedField(h.(map[string]any), placeholder, "clientConfig", "caBundle")
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	}
	return o
}

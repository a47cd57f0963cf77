package helm_test

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the chart")

const (
	chartDir    = "startupgate"
	overlaysDir = "../overlays"
	// The README installs the release as "startupgate" into the kustomize base's namespace;
	// with those, every name the chart renders is the base's name.
	releaseName = "startupgate"
	namespace   = "startupgate-system"
)

// An install is one way to install the gate, as values for the chart and as the overlay
// that must render the same objects.
type install struct {
	overlay string
	values  map[string]any
}

var installs = []install{
	{"self-signed", map[string]any{"certificates": map[string]any{"mode": "selfSigned"}}},
	{"cert-manager", map[string]any{"certificates": map[string]any{"mode": "certManager"}}},
	{"policy", map[string]any{"mode": "policy"}},
	{"pod-guard", map[string]any{"podGuard": map[string]any{"enabled": true}, "certificates": map[string]any{"mode": "selfSigned"}}},
}

// kubeVersion is the Kubernetes the chart is rendered for (the version the project pins).
var kubeVersion = common.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading chart: %v", err)
	}
	return ch
}

// renderValues is what `helm install` hands the templates, schema validation included.
func renderValues(ch *chart.Chart, vals map[string]any) (common.Values, error) {
	caps := *common.DefaultCapabilities
	caps.KubeVersion = kubeVersion
	opts := common.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1}
	return util.ToRenderValues(ch, vals, opts, &caps)
}

// renderFiles renders every template; lookup, if not nil, answers the chart's `lookup` calls.
func renderFiles(t *testing.T, vals map[string]any, lookup engine.ClientProvider) (map[string]string, error) {
	t.Helper()
	ch := loadChart(t)
	top, err := renderValues(ch, vals)
	if err != nil {
		return nil, err
	}
	if lookup != nil {
		return engine.RenderWithClientProvider(ch, top, lookup)
	}
	return engine.Render(ch, top)
}

// renderChart renders the chart's manifests (not NOTES.txt) and decodes them, in file order.
func renderChart(t *testing.T, vals map[string]any, lookup engine.ClientProvider) []*unstructured.Unstructured {
	t.Helper()
	files, err := renderFiles(t, vals, lookup)
	if err != nil {
		t.Fatalf("rendering chart with %v: %v", vals, err)
	}
	var out []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		out = append(out, decodeAll(t, name, files[name])...)
	}
	if len(out) == 0 {
		t.Fatalf("chart renders no objects for %v", vals)
	}
	return out
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func decodeAll(t *testing.T, src, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range docSep.Split(manifest, -1) {
		u := decode(t, src, []byte(doc))
		if u != nil {
			out = append(out, u)
		}
	}
	return out
}

// decode turns one YAML document into an object; a document of only comments is nil.
func decode(t *testing.T, src string, doc []byte) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if len(m) == 0 {
		return nil
	}
	return &unstructured.Unstructured{Object: m}
}

// buildOverlay is `kustomize build deploy/overlays/NAME`, with the kustomize Go API.
func buildOverlay(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(overlaysDir, name)
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		out = append(out, decode(t, dir, y))
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func mustFind(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %q rendered", kind, name)
	}
	return o
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// configMap is the chart's ConfigMap of the gate's config, named by its content
// (startupgate-config-<hash>).
func configMap(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && generatedName.MatchString(o.GetName()) {
			return o
		}
	}
	t.Fatal("no ConfigMap startupgate-config-<hash> rendered")
	return nil
}

package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/deploy"
	"github.com/startupgate/startupgate/gate/config"
)

// Rendering the kustomizations as `kubectl apply -k` would, and reading what they hold.

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
		t.Helper()
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

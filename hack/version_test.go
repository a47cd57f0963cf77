package hack

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// semver is the form VERSION must have: the chart's version field requires SemVer 2, and
// the image tag and --version print it as is.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// TestChartVersion holds the chart's version and appVersion equal to VERSION, the one source
// the Makefile stamps into the binaries and the image. A test rather than a rendering step,
// so that Chart.yaml stays a plain file that helm and the chart's own tests read directly.
func TestChartVersion(t *testing.T) {
	raw, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	if !semver.MatchString(version) {
		t.Fatalf("VERSION %q is not a SemVer version (MAJOR.MINOR.PATCH[-PRERELEASE])", version)
	}
	chartPath := "../deploy/helm/startupgate/Chart.yaml"
	raw, err = os.ReadFile(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatalf("%s: %v", chartPath, err)
	}
	if chart.Version != version || chart.AppVersion != version {
		t.Errorf("%s: version %q, appVersion %q; want both %q, the VERSION file's", chartPath, chart.Version, chart.AppVersion, version)
	}
}

// TestManifestImageVersion holds the kustomize base's image tag equal to VERSION; the chart
// takes its tag from appVersion, which TestChartVersion checks.
func TestManifestImageVersion(t *testing.T) {
	raw, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	for file, want := range map[string]string{
		"../deploy/base/deployment.yaml":    "image: ghcr.io/startupgate/startupgate:" + version + "\n",
		"../deploy/base/kustomization.yaml": "    newTag: " + version + "\n",
	} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), want) {
			t.Errorf("%s has no %q: its image tag must be VERSION's", file, strings.TrimSpace(want))
		}
	}
}

package deploy

import (
	"os/exec"
	"testing"
)

// TestHelmChartModule runs the chart's own tests: rendering with the Helm SDK, the proof
// that each install equals its kustomize overlay, lint, schema errors and the upgrade of the
// self-signed pair. They live in their own module (deploy/helm) so that Helm never enters the
// gate's dependencies; this test is how `go test ./deploy/...` reaches them. The rendered
// chart itself is applied to the real apiserver here, in TestOverlaysApply.
func TestHelmChartModule(t *testing.T) {
	cmd := exec.Command("go", "test", "-race", "-vet=all", "./...")
	cmd.Dir = "helm"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in deploy/helm: %v\n%s", err, out)
	}
	t.Logf("deploy/helm:\n%s", out)
}

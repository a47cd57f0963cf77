package deploy

import (
	"os/exec"
	"testing"
)

// The install paths that need libraries the gate must never import live in modules of their
// own: the Helm chart's tests (deploy/helm, the Helm SDK) and the image's (hack/image,
// go-containerregistry). The root module's ./... does not reach them; these tests are how
// `go test ./deploy/...`, and so `make test`, runs them, with the same flags. Run here, they
// take one of go test's slots beside the scenario suite instead of adding to it afterwards.

// TestHelmChartModule runs the chart's own tests: rendering with the Helm SDK, the proof
// that each install equals its kustomize overlay, lint, schema errors and the upgrade of the
// self-signed pair; and the chart installed with the Helm SDK onto real nodes, its gate
// serving a real kubelet's Node and fake nodes' bursts (TestChartOnRealNodes). The rendered
// chart itself is applied to the real apiserver here too, in TestOverlaysApply.
func TestHelmChartModule(t *testing.T) {
	testModule(t, "helm")
}

// TestImageModule runs hack/image's tests: the gate's image built without Docker, opened
// again, reproducible, and its /gate run.
func TestImageModule(t *testing.T) {
	testModule(t, "../hack/image")
}

// testModule runs `go test -race -vet=all ./...` in the module at dir. GOFLAGS (make test's
// no-DWARF flag) is inherited, so the nested builds share the root build's packages. The
// timeout is make test's, not go test's default of 10 minutes, which the real nodes' test
// can come near on a loaded machine.
func testModule(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "test", "-race", "-vet=all", "-timeout", "30m", "./...")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", dir, err, out)
	}
	t.Logf("%s:\n%s", dir, out)
}

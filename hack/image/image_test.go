package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var meta = Meta{Version: "v0.1.0", Revision: "0123456789abcdef", Source: "https://example.com/startupgate",
	Created: time.Unix(1700000000, 0).UTC(), Arch: "amd64"}

// staticBinary is testdata/hello built the way `make image` builds the gate, once for the
// tests that share it.
func staticBinary(t *testing.T) []byte {
	t.Helper()
	hello.once.Do(func() { hello.bin, hello.err = buildBinary(".", "./testdata/hello") })
	if hello.err != nil {
		t.Fatal(hello.err)
	}
	return hello.bin
}

var hello struct {
	once sync.Once
	bin  []byte
	err  error
}

// buildBinary builds pkg in the module at dir with `make image`'s flags and returns the
// binary.
func buildBinary(dir, pkg string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "image-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", "build", "-C", dir, "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return os.ReadFile(out)
}

// gateBinary is cmd/gate built with `make image`'s flags. `make test` builds it once, before
// go test, and names it in $STARTUPGATE_GATE_BINARY, as it does for the scenario suite, so
// that one cold CI run compiles it once instead of once per test that runs it; run by hand,
// this test builds it itself.
func gateBinary(t *testing.T) []byte {
	t.Helper()
	p := os.Getenv("STARTUPGATE_GATE_BINARY")
	if p == "" {
		bin, err := buildBinary("../..", "./cmd/gate")
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	bin, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("$STARTUPGATE_GATE_BINARY: %v", err)
	}
	return bin
}

// buildTar builds and writes the image; it returns the tarball's path.
func buildTar(t *testing.T, bin []byte, m Meta) string {
	t.Helper()
	img, err := Build(bin, m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := Write(path, "example.com/startupgate:test", img); err != nil {
		t.Fatal(err)
	}
	return path
}

// verifiedImage builds bin into an image tarball, checks it with Verify, and opens it again.
func verifiedImage(t *testing.T, bin []byte) (string, v1.Image, tarball.Manifest) {
	t.Helper()
	path := buildTar(t, bin, meta)
	if _, err := Verify(path, bin); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	img, docker, err := openArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, img, docker
}

// TestImage opens the tarball and checks the entrypoint, the user, the labels and the binary.
func TestImage(t *testing.T) {
	path, img, docker := verifiedImage(t, staticBinary(t))
	if len(docker) != 1 || len(docker[0].RepoTags) != 1 || docker[0].RepoTags[0] != "example.com/startupgate:test" {
		t.Errorf("manifest.json %+v: want the one tag example.com/startupgate:test for docker load", docker)
	}
	if fromDocker, err := tarball.ImageFromPath(path, nil); err != nil {
		t.Errorf("the tarball does not load as docker load reads it: %v", err)
	} else if id, _ := fromDocker.ConfigName(); !sameConfig(t, img, id.String()) {
		t.Errorf("manifest.json names config %s, not the OCI image's", id)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/gate" {
		t.Errorf("user %q entrypoint %v, want 65532:65532 and [/gate]", cf.Config.User, cf.Config.Entrypoint)
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": "v0.1.0", "org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.created": "2023-11-14T22:13:20Z"} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if !cf.Created.Time.Equal(meta.Created) || cf.Architecture != "amd64" {
		t.Errorf("created %v arch %q, want %v amd64", cf.Created, cf.Architecture, meta.Created)
	}
	mt, err := img.MediaType()
	if err != nil || !strings.Contains(string(mt), "oci") {
		t.Errorf("manifest media type %q (%v), want OCI", mt, err)
	}
}

// TestReproducible: the same binary and commit give the same digest; a different binary or
// commit gives another one.
func TestReproducible(t *testing.T) {
	bin := staticBinary(t)
	digest := func(bin []byte, m Meta) string {
		s, err := Verify(buildTar(t, bin, m), bin)
		if err != nil {
			t.Fatal(err)
		}
		return s.Digest.String()
	}
	first := digest(bin, meta)
	if again := digest(bin, meta); again != first {
		t.Errorf("two builds: %s and %s", first, again)
	}
	other := meta
	other.Revision = "fedcba9876543210"
	if d := digest(bin, other); d == first {
		t.Errorf("another commit gives the same digest %s", d)
	}
	if d := digest(append(bin[:len(bin):len(bin)], 0), meta); d == first {
		t.Errorf("another binary gives the same digest %s", d)
	}
}

// TestVerifyRejects: Verify fails for an image the Deployment could not run.
func TestVerifyRejects(t *testing.T) {
	bin := staticBinary(t)
	dynamic, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		bin, want []byte
		err       string
	}{
		"a script":            {[]byte("#!/bin/sh\necho hi\n"), nil, "not an ELF"},
		"a dynamic binary":    {dynamic, nil, "dynamically linked"},
		"not the given build": {bin, append([]byte{}, bin[:len(bin)-1]...), "not the binary"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(buildTar(t, tc.bin, meta), tc.want)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Verify: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func sameConfig(t *testing.T, img v1.Image, id string) bool {
	t.Helper()
	want, err := img.ConfigName()
	return err == nil && want.String() == id
}

// TestGateImage builds the real gate into an image, opens the tarball, and runs the /gate it
// holds: a command that needs no cluster prints the gate's admission policy.
func TestGateImage(t *testing.T) {
	bin := gateBinary(t)
	_, gate, err := verify(buildTar(t, bin, meta), bin)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(exe, gate, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--print-policy").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kind: MutatingAdmissionPolicy") {
		t.Errorf("/gate --print-policy: %v\n%s", err, out)
	}
}

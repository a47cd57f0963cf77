// Package hack holds make's helper scripts; its test checks hack/buildgc, the -toolexec
// wrapper of make test, whose choice of what to run decides what vet checks.
package hack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildgc runs the wrapper on a stand-in tool that records its GOGC: vet's facts pass is
// skipped for a third-party package only; everything else runs, with GOGC=400.
func TestBuildgc(t *testing.T) {
	wrapper, err := filepath.Abs("buildgc")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool    string
		vetxOnly      bool
		moduleVersion string
		wantRun       bool
	}{
		{"third-party package, facts only", "vet", true, "v0.36.3", false},
		{"standard library, facts only", "vet", true, "", true},
		{"our package, vetted", "vet", false, "", true},
		{"third-party package, vetted", "vet", false, "v1.2.3", true},
		{"compile", "compile", false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			tool := filepath.Join(dir, tc.tool)
			script := "#!/bin/sh\necho \"$GOGC\" > " + marker + "\n"
			if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "vet.cfg")
			// As the go command writes it: json.MarshalIndent with tabs.
			js, err := json.MarshalIndent(map[string]any{
				"ImportPath": "example.com/p", "ModuleVersion": tc.moduleVersion, "VetxOnly": tc.vetxOnly,
			}, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, js, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(wrapper, tool, "-unsafeptr=false", cfg).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, err := os.ReadFile(marker)
			if ran := err == nil; ran != tc.wantRun {
				t.Fatalf("tool ran: %v, want %v", ran, tc.wantRun)
			}
			if tc.wantRun && strings.TrimSpace(string(got)) != "400" {
				t.Errorf("the tool ran with GOGC=%q, want 400", strings.TrimSpace(string(got)))
			}
		})
	}
}

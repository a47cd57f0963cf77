package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/internal/golden"
)

// TestGoldenPolicy pins the rendered MutatingAdmissionPolicy and binding, byte for byte:
// they are applied as-is (deploy/overlays/policy), so any change to them should show up
// in review as a diff of testdata/policy/. The default config has no input file; every
// testdata/policy/NAME.input.yaml is decoded with LoadConfig and rendered to
// NAME.output.yaml. Rewrite the outputs with `go test ./gate/policy -run Golden -update`.
func TestGoldenPolicy(t *testing.T) {
	type goldenCase struct {
		name string
		load func(t *testing.T) config.Config
	}
	tests := []goldenCase{{"default", func(*testing.T) config.Config { return config.DefaultConfig() }}}
	inputs, err := filepath.Glob(golden.Path("policy", "*.input.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/policy/*.input.yaml (err %v): the custom cases are missing", err)
	}
	for _, in := range inputs {
		tests = append(tests, goldenCase{strings.TrimSuffix(filepath.Base(in), ".input.yaml"), func(t *testing.T) config.Config {
			t.Helper()
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.LoadConfig(data)
			if err != nil {
				t.Fatalf("LoadConfig(%s) = %v", in, err)
			}
			return cfg
		}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.load(t)
			// --print-policy renders only a validated config; a golden file of an invalid one
			// would pin output no user can get.
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			got, err := YAML(&cfg)
			if err != nil {
				t.Fatalf("YAML() = %v", err)
			}
			golden.Compare(t, filepath.Join("policy", tc.name+".output.yaml"), got)
		})
	}
}

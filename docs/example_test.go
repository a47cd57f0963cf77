package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConfigurationShowsTheRulesExample: the rules configuration.md shows as
// deploy/examples/rules.yaml are that file's, comments aside.
func TestConfigurationShowsTheRulesExample(t *testing.T) {
	page, err := os.ReadFile("configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "`deploy/examples/rules.yaml` is a")
	if !ok {
		t.Fatal("configuration.md no longer introduces deploy/examples/rules.yaml")
	}
	_, block, ok := strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatal("no YAML block after the introduction of deploy/examples/rules.yaml")
	}
	block, _, _ = strings.Cut(block, "```")
	file, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "examples", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shown, inFile map[string]any
	if err := yaml.Unmarshal([]byte(block), &shown); err != nil {
		t.Fatalf("configuration.md's copy: %v", err)
	}
	if err := yaml.Unmarshal(file, &inFile); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shown, inFile) {
		t.Errorf("configuration.md shows\n%v\nbut deploy/examples/rules.yaml is\n%v", shown, inFile)
	}
}

package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestEventsTable: every event reason the gate emits is in operations.md's table of events,
// so an operator who meets one in `kubectl get events` finds what it means (two were
// missing when this test came).
func TestEventsTable(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "gate", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`Reason\w+\s*=\s*"(StartupGate\w+)"`)
	var reasons []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range declared.FindAllStringSubmatch(string(src), -1) {
			reasons = append(reasons, m[1])
		}
	}
	if len(reasons) < 10 {
		t.Fatalf("found %d event reasons in gate/*.go; the pattern no longer matches their declarations", len(reasons))
	}
	ops, err := os.ReadFile("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(reasons)
	for _, r := range slices.Compact(reasons) {
		if !regexp.MustCompile("(?m)^\\| [^\\n]*`" + r + "`").Match(ops) {
			t.Errorf("event %s is not in operations.md's table of events", r)
		}
	}
}

package rule

import (
	"os"
	"regexp"
	"testing"
)

// TestTableHasEveryState: every state state.go declares has its one row in Table, so that a
// new state says what it means for holding, quiet and `gate status` where every reader
// finds it, and the rendered table (docs/reference/states.md) lists it.
func TestTableHasEveryState(t *testing.T) {
	src, err := os.ReadFile("state.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s*State\w+ State = "([a-z-]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(declared) < 20 {
		t.Fatalf("found %d states in state.go; the pattern no longer matches their declarations", len(declared))
	}
	for _, m := range declared {
		if row, ok := rows[State(m[1])]; !ok || row.Phase == "" || row.Write == "" || row.Taint == "" {
			t.Errorf("state %s: row %+v, want one with its taint, phase and write", m[1], row)
		}
	}
	if len(rows) != len(Table) || len(Table) != len(declared) {
		t.Errorf("%d rows for %d states, %d of them distinct; want one row per state", len(Table), len(declared), len(rows))
	}
}

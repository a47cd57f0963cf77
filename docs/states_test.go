package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/startupgate/startupgate/gate/rule"
)

// TestStatusListsEveryPhase: operations.md's list of the states `gate status` shows names
// every phase it can show (rule.Phases).
func TestStatusListsEveryPhase(t *testing.T) {
	raw, err := os.ReadFile("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\nStates (")
	if !ok {
		t.Fatal(`operations.md has no paragraph starting "States ("`)
	}
	list, _, _ := strings.Cut(rest, "\n\n")
	list, _, _ = strings.Cut(list, "\nOn a large cluster")
	for _, p := range rule.Phases() {
		if !strings.Contains(list, "`"+string(p)+"`") {
			t.Errorf("operations.md's list of states does not name `%s`", p)
		}
	}
}

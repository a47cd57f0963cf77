package gateundertest

import (
	"os"
	"strings"
	"testing"
)

// TestStacksOfSlowStop: a replica that is slow to stop leaves every goroutine's stack in a
// file the failure names, so that the next such failure says what held it up.
func TestStacksOfSlowStop(t *testing.T) {
	where := stacksOfSlowStop()
	const prefix = "goroutine stacks 10s after the stop: "
	if !strings.HasPrefix(where, prefix) {
		t.Fatalf("stacksOfSlowStop() = %q, want it to start with %q", where, prefix)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(where, prefix), ";")
	defer os.Remove(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "TestStacksOfSlowStop") {
		t.Errorf("%s does not hold this test's own goroutine:\n%.500s", path, raw)
	}
}

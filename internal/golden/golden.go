// Package golden compares a test's output with a file under the repository's testdata/,
// in the kwok style: NAME.input.* beside NAME.output.*, and `go test ./... -run Golden
// -update` rewrites the outputs.
//
// The -update flag lives here, once. `go test ./...` hands its flags to every test binary,
// so every package with tests must know -update, or the command above fails in the first
// package that does not: a package with no golden files of its own imports this one for
// its flag alone (import _ ".../internal/golden").
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ instead of comparing with them")

// Dir is the repository's top-level testdata/ directory, wherever the test runs from.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}

// Path names a file under testdata/.
func Path(elem ...string) string { return filepath.Join(append([]string{Dir()}, elem...)...) }

// Compare fails tb with a diff when got differs from the golden file at testdata/REL, or
// rewrites the file under -update.
func Compare(tb testing.TB, rel string, got []byte) {
	tb.Helper()
	path := Path(rel)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		tb.Errorf("%s differs from the output (-want +got); rerun with -update if the change is meant:\n%s", rel, d)
	}
}

// Updating reports whether -update was given.
func Updating() bool { return *update }

package hack

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestLeftovers: hack/leftovers passes a run that leaves nothing behind, keeps a failing
// run's exit status, and fails a run that leaves a process behind, naming it and killing it.
func TestLeftovers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "clean", args: []string{"true"}},
		{name: "failed", args: []string{"false"}, code: 1},
		{name: "orphan", args: []string{"bash", "-c", "sleep 61 & disown"}, code: 1, stderr: "sleep 61"},
		{name: "orphan of a failed run", args: []string{"bash", "-c", "sleep 62 & disown; exit 3"}, code: 3, stderr: "sleep 62"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			cmd := exec.Command("./leftovers", tt.args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
			if tt.stderr != "" {
				if out, err := exec.Command("pgrep", "-fx", tt.stderr).Output(); err == nil {
					t.Errorf("%q still runs after the check (pid %s)", tt.stderr, strings.TrimSpace(string(out)))
				}
			}
		})
	}
}

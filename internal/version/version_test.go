package version

import (
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, version, commit, want string
	}{
		{"stamped", "0.1.0", "0123456789abcdef0123456789abcdef01234567", "startupgate 0.1.0 (commit 0123456)"},
		{"short commit kept", "0.1.0", "abc", "startupgate 0.1.0 (commit abc)"},
		{"dirty suffix kept", "0.2.0", "0123456789abcdef-dirty", "startupgate 0.2.0 (commit 0123456-dirty)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setStamp(t, tc.version, tc.commit)
			if got := String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRevisionUnstamped: an empty stamp (-X ...Commit= with no git) falls back to the build
// info; a test binary has no VCS settings, so it reports "unknown", never "".
func TestRevisionUnstamped(t *testing.T) {
	setStamp(t, "dev", "")
	if got := Revision(); got == "" {
		t.Errorf("Revision() = %q, want a commit or %q", got, unknown)
	}
}

func TestRevisionOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs", nil, unknown},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "abcdef0"}, {Key: "vcs.modified", Value: "false"}}, "abcdef0"},
		{"modified", []debug.BuildSetting{{Key: "vcs.revision", Value: "abcdef0"}, {Key: "vcs.modified", Value: "true"}}, "abcdef0-dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := revisionOf(&debug.BuildInfo{Settings: tc.settings}); got != tc.want {
				t.Errorf("revisionOf() = %q, want %q", got, tc.want)
			}
		})
	}
}

// setStamp sets the link-time variables for one test and restores them after it.
func setStamp(t *testing.T, v, c string) {
	t.Helper()
	oldV, oldC := Version, Commit
	Version, Commit = v, c
	t.Cleanup(func() { Version, Commit = oldV, oldC })
}

// TestReleaseOf: go install records the module version; a build in a checkout records
// "(devel)", which is no version.
func TestReleaseOf(t *testing.T) {
	for _, tc := range []struct{ main, want string }{{"v0.1.0", "v0.1.0"}, {"v0.0.0-20261128230000-abcdef012345", "v0.0.0-20261128230000-abcdef012345"}, {"(devel)", "dev"}, {"", "dev"}} {
		if got := releaseOf(&debug.BuildInfo{Main: debug.Module{Version: tc.main}}); got != tc.want {
			t.Errorf("releaseOf(%q) = %q, want %q", tc.main, got, tc.want)
		}
	}
}

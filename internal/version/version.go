// Package version is the build's version and commit. The Makefile stamps both with
// -ldflags -X from the VERSION file and git, so that every binary, the image and the chart
// name one version.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version and Commit are set at link time:
//
//	-X github.com/startupgate/startupgate/internal/version.Version=0.1.0
//	-X github.com/startupgate/startupgate/internal/version.Commit=<git rev-parse HEAD>
//
// A plain `go build`, `go run` or `go install` leaves them at their defaults; Release and
// Revision then fall back to what the go command records in the binary: the module version
// (`go install ...@version`) and the VCS revision (a build in a checkout, unless
// GOFLAGS has -buildvcs=false).
var (
	Version = "dev"
	Commit  = "unknown"
)

const (
	unknown = "unknown"
	dirty   = "-dirty"
	// shortLen is how many hex digits of a commit String prints, git's short form.
	shortLen = 7
)

// Revision returns the commit the binary was built from: the stamped Commit, else the
// build info's vcs.revision (with "-dirty" when the tree was modified), else "unknown".
func Revision() string {
	if Commit != "" && Commit != unknown {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return unknown
	}
	return revisionOf(info)
}

// revisionOf reads the commit the go command recorded in a binary's build info.
func revisionOf(info *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return unknown
	}
	if modified == "true" {
		rev += dirty
	}
	return rev
}

// String is the line a --version flag prints: "startupgate 0.1.0 (commit abc1234)".
func String() string {
	return fmt.Sprintf("startupgate %s (commit %s)", Release(), ShortRevision())
}

// Release returns the version the binary was built as: the stamped Version, else the module
// version the go command records for `go install .../cmd/gate@v0.1.0` ("v0.1.0"), else
// "dev".
func Release() string {
	if Version != "" && Version != "dev" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return releaseOf(info)
	}
	return "dev"
}

// releaseOf reads the main module's version from a binary's build info: a tagged or
// pseudo-version when the binary was built from the module proxy, "(devel)" from a checkout.
func releaseOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

// ShortRevision is Revision in git's short form, as String prints it.
func ShortRevision() string { return short(Revision()) }

// short cuts a full commit hash to git's short form and keeps a "-dirty" suffix.
func short(rev string) string {
	hash, isDirty := strings.CutSuffix(rev, dirty)
	if len(hash) <= shortLen {
		return rev
	}
	hash = hash[:shortLen]
	if isDirty {
		hash += dirty
	}
	return hash
}

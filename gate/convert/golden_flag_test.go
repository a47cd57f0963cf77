package convert

// This package has no golden files (cmd/gate's convert test owns them); it imports the
// helper for its -update flag alone, so that `go test ./... -update` runs here too (see
// internal/golden).
import _ "github.com/startupgate/startupgate/internal/golden"

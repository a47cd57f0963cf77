package gate

// This package has no golden files; it imports the helper for its -update flag alone, so
// that `go test ./... -run Golden -update` runs here too (see internal/golden).
import _ "github.com/startupgate/startupgate/internal/golden"

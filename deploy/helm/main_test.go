package helm_test

import (
	"testing"

	"github.com/startupgate/startupgate/internal/simtest"
)

// TestMain keeps the simulator's and client-go's logs (TestChartOnRealNodes drives the
// simulator) off the test output, in a file kept when a test fails.
func TestMain(m *testing.M) { simtest.Main(m, nil) }

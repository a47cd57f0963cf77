package bench

import (
	"testing"

	"github.com/startupgate/startupgate/internal/simtest"
)

func TestMain(m *testing.M) { simtest.Main(m, nil) }

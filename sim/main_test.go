package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/internal/simtest"
	"github.com/startupgate/startupgate/sim/controlplane"
	"github.com/startupgate/startupgate/sim/gateundertest"
)

// One embedded plane serves every test in this process: starting one takes seconds, and
// scenarios isolate themselves (namespace, node names, scenario label). TestExclusive's
// child process has one of its own (exclusive_test.go).
var (
	planeOnce sync.Once
	plane     *controlplane.Embedded
	planeCfg  *rest.Config
	planeErr  error
)

func TestMain(m *testing.M) {
	// Before any test, so that TestExclusive's child runs beside them; after the floor
	// controller's child has taken its turn (it never returns), which is this binary too.
	gateundertest.RunFloorChild()
	flag.Parse()
	startExclusiveChildIfRun()
	simtest.Main(m, func() {
		if plane != nil {
			if err := plane.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stopping plane:", err)
			}
		}
	})
}

// sharedPlane starts the embedded plane on first use. Missing binaries are a failure, not
// a skip: `make test` builds them first, and a bare `go test` says what to run.
func sharedPlane(t *testing.T) *rest.Config {
	t.Helper()
	planeOnce.Do(func() {
		plane = &controlplane.Embedded{}
		planeCfg, planeErr = plane.Start(context.Background())
	})
	if errors.Is(planeErr, controlplane.ErrNoBinaries) {
		t.Fatalf("%v", planeErr)
	}
	if planeErr != nil {
		t.Fatalf("starting embedded plane: %v", planeErr)
	}
	return planeCfg
}

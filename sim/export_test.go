package sim

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/sim/controlplane"
)

// SharedPlane is the test binary's one embedded plane, for the tests of the packages built
// on the runner (sim/explore's slice runs here, beside the suite).
func SharedPlane(t *testing.T) (*rest.Config, *controlplane.Embedded) {
	t.Helper()
	rc := sharedPlane(t)
	return rc, plane
}

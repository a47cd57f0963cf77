package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/startupgate/startupgate/internal/simtest"
	"github.com/startupgate/startupgate/sim/controlplane"
)

// Two embedded planes serve this package's tests. Most tests share the first: starting a
// plane takes seconds, and scenarios isolate themselves (namespace, node names, scenario
// label). A scenario that changes its plane (restarts the apiserver, or runs the
// controller-manager with other settings) cannot share one; those run one after another on
// the second, beside the others on the first. On one plane they ran in series with
// everything else: 190 s of the package's 400 s, most of it waiting out their windows.
var shared, apart lazyPlane

// lazyPlane is an embedded plane started on first use.
type lazyPlane struct {
	once sync.Once
	p    *controlplane.Embedded
	cfg  *rest.Config
	err  error
}

func TestMain(m *testing.M) {
	simtest.Main(m, func() {
		for _, l := range []*lazyPlane{&shared, &apart} {
			if l.p == nil {
				continue
			}
			if err := l.p.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stopping plane:", err)
			}
		}
	})
}

// sharedPlane is the plane most tests share.
func sharedPlane(t *testing.T) *rest.Config {
	t.Helper()
	return shared.start(t)
}

// start starts the plane on first use. Missing binaries are a failure, not a skip: `make
// test` builds them first, and a bare `go test` says what to run.
func (l *lazyPlane) start(t *testing.T) *rest.Config {
	t.Helper()
	l.once.Do(func() {
		l.p = &controlplane.Embedded{}
		l.cfg, l.err = l.p.Start(context.Background())
	})
	if errors.Is(l.err, controlplane.ErrNoBinaries) {
		t.Fatalf("%v", l.err)
	}
	if l.err != nil {
		t.Fatalf("starting embedded plane: %v", l.err)
	}
	return l.cfg
}

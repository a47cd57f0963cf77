package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// One embedded plane serves every test in this package: starting one takes seconds, and
// scenarios isolate themselves (namespace, node names, scenario label).
var (
	planeOnce sync.Once
	plane     *Embedded
	planeCfg  *rest.Config
	planeErr  error
)

func TestMain(m *testing.M) {
	RunFloorChild()
	logf, err := os.CreateTemp("", "startupgate-sim-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logf)))
	klog.SetOutput(logf)
	klog.LogToStderr(false)
	code := m.Run()
	if plane != nil {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping plane:", err)
		}
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "gate and client logs:", logf.Name())
	} else {
		_ = os.Remove(logf.Name())
	}
	os.Exit(code)
}

// sharedPlane starts the embedded plane on first use. Missing binaries are a failure, not
// a skip: `make test` builds them first, and a bare `go test` says what to run.
func sharedPlane(t *testing.T) *rest.Config {
	t.Helper()
	planeOnce.Do(func() {
		plane = &Embedded{}
		planeCfg, planeErr = plane.Start(context.Background())
	})
	if errors.Is(planeErr, ErrNoBinaries) {
		t.Fatalf("%v", planeErr)
	}
	if planeErr != nil {
		t.Fatalf("starting embedded plane: %v", planeErr)
	}
	return planeCfg
}

// Package simtest is the TestMain of every test binary that drives the simulator.
//
// Such a binary must do two things before any test: serve as the floor controller's child
// process when the harness re-executes it (gateundertest.RunFloorChild), and keep the
// gate's and client-go's logs off the test output, in a file that is kept only when a test
// fails.
package simtest

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/startupgate/startupgate/internal/jsonlog"
	"github.com/startupgate/startupgate/sim/gateundertest"
)

// Main runs the tests of m, then after (if set; e.g. stopping a shared plane), and exits
// with the tests' code.
func Main(m *testing.M, after func()) {
	gateundertest.RunFloorChild()
	logf, err := os.CreateTemp("", "startupgate-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := jsonlog.New(logf)
	ctrl.SetLogger(logger)
	// klog's own output setting leaves errors on stderr; a logger takes all of it.
	klog.SetLogger(logger)
	code := m.Run()
	if after != nil {
		after()
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "gate and client logs:", logf.Name())
	} else {
		_ = os.Remove(logf.Name())
	}
	os.Exit(code)
}

package gate

import (
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/startupgate/startupgate/gate/config"
)

func TestMain(m *testing.M) {
	// controller-runtime warns loudly when no logger was ever set; the tests do not read logs.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// t0 is the creation time of the node under test; every other time is relative to it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gateTaint is the default startup taint.
var gateTaint = corev1.Taint{Key: config.DefaultTaintKey, Value: config.DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}

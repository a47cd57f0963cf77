package deploy_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/sim/controlplane"
)

// The overlays operators install. deploy/base is not standalone (it lacks the webhook
// Secret), so it is only ever rendered through them.
var overlays = []string{"self-signed", "cert-manager", "policy", "pod-guard"}

const (
	gateNamespace = "startupgate-system"
	gateSA        = "startupgate"
	fieldOwner    = "startupgate-test"
	// certManagerGroup owns the only kinds allowed to fail to apply: their CRDs are not
	// installed on the embedded plane.
	certManagerGroup = "cert-manager.io"
)

// One embedded plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) serves
// every test in this package. It is started in TestMain; missing binaries fail the tests
// that need it with the error, they do not skip.
var (
	plane    *controlplane.Embedded
	planeCfg *rest.Config
	planeErr error
)

func TestMain(m *testing.M) {
	logf, err := os.CreateTemp("", "startupgate-deploy-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logf)))
	// client-go logs through klog; errors (e.g. the leader-election Event the Role does not
	// grant) would otherwise also go to stderr.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(logf)

	plane = &controlplane.Embedded{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	planeCfg, planeErr = plane.Start(ctx)
	cancel()

	code := m.Run()
	if err := plane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping plane:", err)
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "gate and client logs:", logf.Name())
	} else {
		_ = os.Remove(logf.Name())
	}
	os.Exit(code)
}

// adminConfig is the plane's admin config; it fails the test if the plane did not start.
func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	if planeErr != nil {
		t.Fatalf("starting embedded plane: %v", planeErr)
	}
	return rest.CopyConfig(planeCfg)
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(adminConfig(t), client.Options{Scheme: gate.Scheme()})
	if err != nil {
		t.Fatalf("creating admin client: %v", err)
	}
	return c
}

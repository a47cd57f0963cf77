// Command gate is the in-cluster startupgate binary: flags and env become a config.Config,
// and setup.NewManager does the rest.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/certs"
	"github.com/startupgate/startupgate/gate/policy"
	"github.com/startupgate/startupgate/gate/setup"
	"github.com/startupgate/startupgate/internal/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		// --help has printed the usage; asking for it is not a failure.
		if !errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gate:", err)
			os.Exit(1)
		}
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "convert" {
		return runConvert(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "validate" {
		return runValidate(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "rotate-ca" {
		return runRotateCA(context.Background(), args[1:], os.Stdout, os.Stderr, time.Now)
	}
	s, err := parse(args, os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	if s.printVersion {
		fmt.Println(version.String())
		return nil
	}
	if s.printPolicy {
		out, err := policy.YAML(&s.cfg)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(out)
		return err
	}
	level, err := zapLevel(s.logLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(level)))
	rc, err := restConfig(s.kubeconfig, s.kubeContext)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(s.qps), s.burst
	ctx := ctrl.SetupSignalHandler()

	if s.releaseCommand {
		return release(ctx, s, rc)
	}
	if s.statusCommand {
		return status(ctx, s, rc, os.Stdout, time.Now())
	}
	if s.preflightCommand {
		return preflight(ctx, s, rc, os.Stdout, time.Now())
	}
	var cm *certs.Manager
	if s.certSecret != "" {
		c, err := client.New(rc, client.Options{Scheme: gate.Scheme()})
		if err != nil {
			return fmt.Errorf("creating client: %w", err)
		}
		// Before the webhook server starts: it reads --cert-dir at its start.
		cm = s.certManager(c)
		if err := cm.Setup(ctx); err != nil {
			return fmt.Errorf("making the webhook certificate: %w", err)
		}
	}
	opts := setup.Options{Workers: s.workers, ColdStandby: !s.warmStandby, CacheSyncTimeout: s.cacheSyncTimeout,
		NodeLabels: s.nodeLabels, PodGuardTimeout: s.podGuardTimeout,
		PodGuardQPS: float32(s.podGuardQPS), PodGuardBurst: s.podGuardBurst,
		// The Deployment passes these through the downward API.
		Self: setup.Self{Node: os.Getenv("NODE_NAME"), Pod: os.Getenv("POD_NAME"), Namespace: os.Getenv("POD_NAMESPACE")}}
	mgr, err := setup.NewManager(rc, &s.cfg, setup.ManagerOptions{
		Metrics:                 metricsserver.Options{BindAddress: s.metricsAddr},
		HealthProbeBindAddress:  s.probeAddr,
		PprofBindAddress:        s.pprofAddr,
		LeaderElection:          s.leaderElect,
		LeaderElectionID:        "startupgate.startup.k8s.io",
		LeaderElectionNamespace: s.leaderNS,
		LeaseDuration:           &s.leaseDuration,
		RenewDeadline:           &s.renewDeadline,
		RetryPeriod:             &s.retryPeriod,
		// Release the lease on clean shutdown so a rolling update fails over at once.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: s.webhookPort, CertDir: s.certDir}),
	}, opts)
	if err != nil {
		return err
	}
	if err := addStartGC(mgr, opts.Filled(s.leaderElect)); err != nil {
		return err
	}
	if cm != nil {
		if err := mgr.Add(cm); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// addStartGC sets the process's memory limit and, under one, a lazier collector until
// the informers of filled, those a replica fills before it leads, have synced (memory.go).
func addStartGC(mgr manager.Manager, filled []client.Object) error {
	limit := setMemoryLimit(os.Getenv, "/sys/fs/cgroup")
	sg := newStartGC(os.Getenv, limit, mgr.GetCache(), filled...)
	ctrl.Log.Info("Memory limit", "bytes", limit, "lazyCollectorUntilSynced", sg != nil)
	if sg == nil {
		return nil
	}
	return mgr.Add(sg)
}

// homeKubeconfig is ~/.kube/config, a variable so that a test can point it elsewhere.
var homeKubeconfig = clientcmd.RecommendedHomeFile

// restConfig loads the client config as controller-runtime binaries do: the --kubeconfig
// file, else $KUBECONFIG, else in-cluster, else ~/.kube/config. It is done here rather than
// by ctrl.GetConfig, which logs a stack trace for every place it found nothing: a user who
// runs `gate status` without a cluster gets one line that says what to set.
func restConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	if kubeconfig != "" {
		rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return rc, nil
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	if env == "" && kubeContext == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			return rc, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if env == "" {
		rules.Precedence = []string{homeKubeconfig}
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err) && env != "":
		return nil, fmt.Errorf("no cluster to talk to: KUBECONFIG=%s names no usable kubeconfig; pass --kubeconfig FILE", env)
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no cluster to talk to: not in a Pod, no KUBECONFIG and no %s; pass --kubeconfig FILE", homeKubeconfig)
	case err != nil:
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return rc, nil
}

func release(ctx context.Context, s *settings, rc *rest.Config) error {
	c, cfg, err := clusterClient(ctx, s, rc)
	if err != nil {
		return err
	}
	released, err := gate.ReleaseNodes(ctx, c, cfg, time.Now(), s.releaseNodes...)
	if len(released) > 0 {
		fmt.Printf("released %d node(s): %s\n", len(released), strings.Join(released, " "))
	} else {
		fmt.Println("no node holds the startup taint")
	}
	return err
}

// Command gate is the in-cluster startupgate binary: flags and env become a gate.Config,
// and gate.NewManager does the rest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/startupgate/startupgate/gate"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gate:", err)
			os.Exit(1)
		}
	}
}

func run(args []string) error {
	s, err := parse(args, os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	if s.printPolicy {
		out, err := s.cfg.PolicyYAML()
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(out)
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(zapcore.InfoLevel)))
	rc, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = float32(s.qps), s.burst
	ctx := ctrl.SetupSignalHandler()

	if s.releaseCommand {
		return release(ctx, s, rc)
	}
	mgr, err := gate.NewManager(rc, &s.cfg, gate.ManagerOptions{
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
	}, gate.Options{Workers: s.workers})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func release(ctx context.Context, s *settings, rc *rest.Config) error {
	c, err := client.New(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	released, err := gate.ReleaseNodes(ctx, c, &s.cfg, time.Now(), s.releaseNodes...)
	if len(released) > 0 {
		fmt.Printf("released %d node(s): %s\n", len(released), strings.Join(released, " "))
	} else {
		fmt.Println("no node holds the startup taint")
	}
	return err
}

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate"
)

// settings is everything the command line says: the gate's Config and how to run it.
type settings struct {
	cfg            gate.Config
	printPolicy    bool
	leaderElect    bool
	leaderNS       string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	metricsAddr    string
	probeAddr      string
	pprofAddr      string
	webhookPort    int
	certDir        string
	workers        int
	qps            float64
	burst          int
	releaseAll     bool
	releaseNodes   []string
	releaseCommand bool
}

// multi collects a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// parse reads flags and env into settings. Precedence, lowest first: the contract's
// defaults, the --config file, STARTUP_WEBHOOK / STARTUP_BACKFILL, explicit flags.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*settings, error) {
	s := &settings{}
	def := gate.DefaultConfig()
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configFile, taint, nodeSelector, timeoutPolicy, condition string
		minHold, maxHold                                          time.Duration
		webhook, backfill, annotationOnly, podGuard               bool
		require                                                   multi
	)
	fs.StringVar(&configFile, "config", "", "YAML file holding the whole gate Config; explicit flags override it")
	fs.BoolVar(&webhook, "webhook", def.Webhook, "serve the Node mutating webhook (default from STARTUP_WEBHOOK)")
	fs.BoolVar(&backfill, "backfill", def.Backfill, "taint idle nodes that came up without the startup taint (default from STARTUP_BACKFILL)")
	fs.BoolVar(&podGuard, "pod-guard", def.PodGuard, "serve the Pod guard validating webhook that denies Pods bound directly to gated nodes")
	fs.DurationVar(&minHold, "min-hold", def.MinHold.Duration, "keep every node gated at least this long after its creation")
	fs.DurationVar(&maxHold, "max-hold", def.MaxHold.Duration, "stop waiting for readiness this long after node creation (0: never); then --timeout-policy applies")
	fs.StringVar(&timeoutPolicy, "timeout-policy", string(def.TimeoutPolicy), "at max hold: release (remove the taint, Warning event) or keep (keep it, alert)")
	fs.BoolVar(&annotationOnly, "annotation-only", def.AnnotationOnly, "count only the "+def.ReadyAnnotation+"=true annotation on init Pods, not Pod readiness")
	fs.StringVar(&taint, "taint", def.Taint.ToString(), "startup taint key[=value]:Effect; use a "+gate.AutoscalerTaintPrefix+" key with the cluster autoscaler")
	fs.StringVar(&nodeSelector, "node-selector", def.NodeSelector, "label selector of the nodes to gate")
	fs.Var(&require, "require", "required component [NAMESPACE:]SELECTOR, repeatable (default: "+gate.DefaultInitLabel+" in all namespaces)")
	fs.StringVar(&condition, "require-condition", "", "node condition Type=Status that must also hold before release")
	fs.BoolVar(&s.printPolicy, "print-policy", false, "print the MutatingAdmissionPolicy and binding for this config as YAML and exit")
	fs.BoolVar(&s.leaderElect, "leader-elect", false, "use leader election so that only one replica releases nodes; the webhook serves on every replica")
	fs.StringVar(&s.leaderNS, "leader-election-namespace", "", "namespace of the leader Lease (default: the Pod's own namespace in cluster)")
	fs.DurationVar(&s.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a non-leader waits before taking over a lease that stopped being renewed")
	fs.DurationVar(&s.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&s.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the lease")
	fs.StringVar(&s.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&s.pprofAddr, "pprof-bind-address", "", "address of the Go profiler's /debug/pprof endpoints (empty: off); keep it on localhost")
	fs.IntVar(&s.webhookPort, "webhook-port", 9443, "port of the webhook server")
	fs.StringVar(&s.certDir, "cert-dir", "", "directory holding tls.crt and tls.key; reloaded when they rotate (default: controller-runtime's temp dir)")
	fs.IntVar(&s.workers, "workers", 16, "nodes reconciled concurrently")
	fs.Float64Var(&s.qps, "kube-api-qps", 100, "client QPS to the apiserver")
	fs.IntVar(&s.burst, "kube-api-burst", 200, "client burst to the apiserver")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gate [flags]\n       gate release (--all | NODE...)\n\nThe startupgate node startup gate.\n\nFlags:\n")
		fs.PrintDefaults()
	}

	if len(args) > 0 && args[0] == "release" {
		s.releaseCommand = true
		args = args[1:]
		fs.BoolVar(&s.releaseAll, "all", false, "with release: release every node holding the startup taint")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if s.releaseCommand {
		s.releaseNodes = fs.Args()
		if s.releaseAll == (len(s.releaseNodes) > 0) {
			return nil, fmt.Errorf("release: give either --all or node names")
		}
	} else if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	cfg := def
	if configFile != "" {
		data, err := os.ReadFile(configFile)
		if err != nil {
			return nil, fmt.Errorf("reading --config: %w", err)
		}
		if cfg, err = gate.LoadConfig(data); err != nil {
			return nil, fmt.Errorf("--config %s: %w", configFile, err)
		}
	}
	for env, dst := range map[string]*bool{"STARTUP_WEBHOOK": &cfg.Webhook, "STARTUP_BACKFILL": &cfg.Backfill} {
		if v := getenv(env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s=%q: want 1 or 0", env, v)
			}
			*dst = b
		}
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "webhook":
			cfg.Webhook = webhook
		case "backfill":
			cfg.Backfill = backfill
		case "pod-guard":
			cfg.PodGuard = podGuard
		case "min-hold":
			cfg.MinHold = metav1.Duration{Duration: minHold}
		case "max-hold":
			cfg.MaxHold = metav1.Duration{Duration: maxHold}
		case "timeout-policy":
			cfg.TimeoutPolicy = gate.TimeoutPolicy(timeoutPolicy)
		case "annotation-only":
			cfg.AnnotationOnly = annotationOnly
		case "taint":
			if cfg.Taint, err = gate.ParseTaint(taint); err != nil {
				err = fmt.Errorf("--taint: %w", err)
			}
		case "node-selector":
			cfg.NodeSelector = nodeSelector
		case "require":
			cfg.Components = nil
			for _, r := range require {
				cfg.Components = append(cfg.Components, gate.ParseComponent(r))
			}
		case "require-condition":
			cfg.RequiredCondition = condition
		}
	})
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	s.cfg = cfg
	return s, nil
}

package main

import (
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/labels"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/certs"
	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/gate/setup"
)

// settings is everything the command line says: the gate's Config and how to run it.
type settings struct {
	cfg           config.Config
	kubeconfig    string
	printPolicy   bool
	printVersion  bool
	leaderElect   bool
	leaderNS      string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	warmStandby   bool
	metricsAddr   string
	probeAddr     string
	pprofAddr     string
	webhookPort   int
	certDir       string
	// podGuardTimeout is the Pod guard webhook's timeoutSeconds, which the guard answers within.
	podGuardTimeout time.Duration
	// podGuardQPS and podGuardBurst limit the Pod guard's own client.
	podGuardQPS   float64
	podGuardBurst int
	// certSecret, webhookService and webhookConfigs: the gate makes its webhooks' certificate
	// (gate/certs) when certSecret is set.
	certSecret       string
	webhookService   string
	webhookConfigs   []string
	workers          int
	cacheSyncTimeout time.Duration
	nodeLabels       []string
	qps              float64
	burst            int
	releaseAll       bool
	releaseNodes     []string
	releaseCommand   bool
	statusCommand    bool
	preflightCommand bool
	statusNodes      []string
	statusHeld       bool
	statusRule       string
	statusSelector   string
	statusHistory    string
	output           string
	logLevel         string
	// kubeContext is the kubeconfig context; fromCluster: status and release read the
	// running gate's config from its ConfigMap (gateNamespace/configMap), as no --config
	// file or contract flag says otherwise.
	kubeContext, gateNamespace, configMap string
	fromCluster                           bool
}

// contractFlags hold the flags that set config.Config fields. They are parsed here first and
// copied onto the Config only when given, so that a flag left at its default never undoes
// the --config file or the env.
type contractFlags struct {
	configFile, taint, nodeSelector, timeoutPolicy, condition string
	minHold, maxHold                                          time.Duration
	webhook, backfill, annotationOnly, podGuard               bool
	require                                                   []string
}

// parse reads flags and env into settings. Precedence, lowest first: the contract's
// defaults, the --config file, STARTUP_WEBHOOK / STARTUP_BACKFILL, explicit flags.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*settings, error) {
	s := &settings{}
	if len(args) > 0 {
		switch args[0] {
		case "release":
			s.releaseCommand, args = true, args[1:]
		case "status":
			s.statusCommand, args = true, args[1:]
		case "preflight":
			s.preflightCommand, args = true, args[1:]
		}
	}
	var f contractFlags
	fs := newFlagSet(s, &f, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := s.positional(fs.Args()); err != nil {
		return nil, err
	}
	if err := validLabelKeys(s.nodeLabels); err != nil {
		return nil, err
	}
	if err := s.validCerts(); err != nil {
		return nil, err
	}
	if s.podGuardTimeout < time.Second || s.podGuardTimeout > 30*time.Second {
		return nil, fmt.Errorf("--pod-guard-timeout %v: want the webhook's timeoutSeconds, 1s to 30s", s.podGuardTimeout)
	}
	if !(s.podGuardQPS > 0) || s.podGuardBurst < 1 { // !(> 0) refuses NaN too
		return nil, fmt.Errorf("--pod-guard-qps %v and --pod-guard-burst %d: want both above 0", s.podGuardQPS, s.podGuardBurst)
	}
	cfg, err := loadConfigFile(f.configFile, stderr)
	if err != nil {
		return nil, err
	}
	if err := overlayEnv(&cfg, getenv); err != nil {
		return nil, err
	}
	if err := f.overlay(fs, &cfg); err != nil {
		return nil, err
	}
	s.fromCluster = (s.statusCommand || s.releaseCommand || s.preflightCommand) && f.configFile == "" && !contractFlagSet(fs)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	s.cfg = cfg
	return s, nil
}

// contractFlagSet reports whether a flag that sets the Config was given.
func contractFlagSet(fs *pflag.FlagSet) bool {
	set := false
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "webhook", "backfill", "pod-guard", "min-hold", "max-hold", "timeout-policy", "annotation-only", "taint", "node-selector", "require", "require-condition":
			set = true
		}
	})
	return set
}

// newFlagSet registers every flag in the Kubernetes convention (--flag, --flag=value), with
// --all only under release, where it means something.
func newFlagSet(s *settings, f *contractFlags, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs, config.DefaultConfig())
	s.register(fs)
	if s.releaseCommand {
		fs.BoolVar(&s.releaseAll, "all", false, "with release: release every node holding the startup taint")
	}
	if s.statusCommand {
		fs.StringVarP(&s.output, "output", "o", "", "with status: output format, wide or json (default: a table)")
		fs.BoolVar(&s.statusHeld, "held", false, "with status: only the rows whose taint is on the node (a rule's or an orphan's)")
		fs.StringVar(&s.statusRule, "rule", "", "with status: only this rule's rows (an orphan's row names the rule that placed its taint)")
		fs.StringVarP(&s.statusSelector, "selector", "l", "", "with status: only the nodes with these labels (label selector syntax)")
		fs.StringVar(&s.statusHistory, "node", "", "with status: this node's history instead: the records the gate keeps on it and its events while they last")
	}
	if s.statusCommand || s.releaseCommand || s.preflightCommand {
		fs.StringVar(&s.kubeContext, "context", "", "with status, release and preflight: the kubeconfig context to use (default: the current one)")
		fs.StringVar(&s.gateNamespace, "gate-namespace", "startupgate-system", "with status, release and preflight: the namespace of the running gate, whose config they read")
		fs.StringVar(&s.configMap, "config-map", "startupgate-config", "with status, release and preflight: the running gate's ConfigMap (key config.yaml), read unless --config or a contract flag is given")
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

func (f *contractFlags) register(fs *pflag.FlagSet, def config.Config) {
	fs.StringVar(&f.configFile, "config", "", "YAML `FILE` holding the whole gate Config; explicit flags override it")
	fs.BoolVar(&f.webhook, "webhook", def.Webhook, "serve the Node mutating webhook (default from STARTUP_WEBHOOK)")
	fs.BoolVar(&f.backfill, "backfill", def.Backfill, "taint idle nodes that came up without the startup taint (default from STARTUP_BACKFILL)")
	fs.BoolVar(&f.podGuard, "pod-guard", def.PodGuard, "serve the Pod guard validating webhook that denies Pods bound directly to gated nodes")
	fs.DurationVar(&f.minHold, "min-hold", def.MinHold.Duration, "keep every node gated at least this long after its creation")
	fs.DurationVar(&f.maxHold, "max-hold", def.MaxHold.Duration, "stop waiting for readiness this long after node creation (0: never); then --timeout-policy applies")
	fs.StringVar(&f.timeoutPolicy, "timeout-policy", string(def.TimeoutPolicy), "at max hold: release (remove the taint, Warning event), keep (keep it, alert) or replace (delete the node's Karpenter NodeClaim, under a budget)")
	fs.BoolVar(&f.annotationOnly, "annotation-only", def.AnnotationOnly, "count only the "+def.ReadyAnnotation+"=true annotation on init Pods, not Pod readiness")
	fs.StringVar(&f.taint, "taint", def.Taint.ToString(), "startup taint key[=value]:Effect; use a "+config.AutoscalerTaintPrefix+" key with the cluster autoscaler")
	fs.StringVar(&f.nodeSelector, "node-selector", def.NodeSelector, "label selector of the nodes to gate")
	// A string array, not a slice: a selector holds commas ("app in (cni,csi)") that a
	// slice flag would split into several components.
	fs.StringArrayVar(&f.require, "require", nil, "required component `[NAMESPACE:]SELECTOR`, repeatable (default: "+config.DefaultInitLabel+" in all namespaces)")
	fs.StringVar(&f.condition, "require-condition", "", "node condition Type=Status that must also hold before release")
}

func (s *settings) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "path to a kubeconfig `FILE`, for running out of cluster (default: $KUBECONFIG, then the in-cluster config, then ~/.kube/config)")
	fs.BoolVar(&s.printVersion, "version", false, "print the version and the commit it was built from, and exit")
	fs.BoolVar(&s.printPolicy, "print-policy", false, "print the MutatingAdmissionPolicy and binding for this config as YAML and exit")
	fs.BoolVar(&s.leaderElect, "leader-elect", false, "use leader election so that only one replica releases nodes; the webhook serves on every replica")
	fs.StringVar(&s.leaderNS, "leader-election-namespace", "", "namespace of the leader Lease (default: the Pod's own namespace in cluster)")
	fs.DurationVar(&s.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a non-leader waits before taking over a lease that stopped being renewed")
	fs.DurationVar(&s.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&s.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the lease")
	fs.BoolVar(&s.warmStandby, "warm-standby", true, "with --leader-elect: a replica that is not the leader keeps watching Nodes and DaemonSets as well as init Pods, so that it takes over without listing the cluster again; false saves the Nodes' memory")
	fs.StringVar(&s.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&s.pprofAddr, "pprof-bind-address", "", "address of the Go profiler's /debug/pprof endpoints (empty: off); keep it on localhost")
	fs.IntVar(&s.webhookPort, "webhook-port", 9443, "port of the webhook server")
	fs.DurationVar(&s.podGuardTimeout, "pod-guard-timeout", gate.DefaultPodGuardTimeout, "with --pod-guard: the Pod guard webhook's timeoutSeconds; the guard answers within half of it, denying a binding it cannot judge in time where a continuous or reboot rule's window may be open, instead of letting the apiserver's timeout allow it")
	fs.Float64Var(&s.podGuardQPS, "pod-guard-qps", setup.DefaultPodGuardQPS, "with --pod-guard: QPS of the Pod guard's own client, apart from --kube-api-qps so that a binding burst and the controller cannot starve each other; an ordinary binding costs the guard no read")
	fs.IntVar(&s.podGuardBurst, "pod-guard-burst", setup.DefaultPodGuardBurst, "with --pod-guard: burst of the Pod guard's own client (it has at most 64 reads in flight)")
	fs.StringVar(&s.certDir, "cert-dir", "", "directory holding tls.crt and tls.key; reloaded when they rotate (default: controller-runtime's temp dir)")
	fs.StringVar(&s.certSecret, "cert-secret", "", "make the webhooks' certificate: a CA kept in this Secret of --webhook-service's namespace (made if missing, never overwritten), a serving certificate minted into --cert-dir and renewed a month before it ends, the CA written into the caBundle of --webhook-configurations and written again when taken out (empty: serve the tls.crt and tls.key mounted in --cert-dir)")
	fs.StringVar(&s.webhookService, "webhook-service", "", "with --cert-secret: the webhook Service as `NAMESPACE/NAME`, whose names the serving certificate carries")
	fs.StringSliceVar(&s.webhookConfigs, "webhook-configurations", nil, "with --cert-secret: the webhook configurations whose caBundle the gate keeps, as mutating/NAME or validating/NAME (one that does not exist is skipped, and so is one without the annotation startup.k8s.io/inject-ca-from: NAMESPACE/SECRET naming --cert-secret)")
	fs.IntVar(&s.workers, "workers", setup.DefaultWorkers, "nodes reconciled concurrently")
	fs.DurationVar(&s.cacheSyncTimeout, "cache-sync-timeout", setup.DefaultCacheSyncTimeout, "how long to wait for the initial lists of Nodes, init Pods and DaemonSets before exiting; a large cluster's take minutes")
	fs.StringSliceVar(&s.nodeLabels, "cache-node-labels", setup.DefaultNodeLabels, "label `KEYS` kept on each cached Node besides those the rules read (* keeps every label); a required DaemonSet that selects nodes by another label makes the gate read the node from the apiserver each time it decides")
	fs.Float64Var(&s.qps, "kube-api-qps", 100, "client QPS to the apiserver")
	fs.IntVar(&s.burst, "kube-api-burst", 200, "client burst to the apiserver")
	fs.StringVar(&s.logLevel, "log-level", "info", "least level logged: error, info (state changes: held, released, re-gated, ...) or debug (every decision, V(1))")
}

// zapLevel is the zap level a --log-level names.
func zapLevel(name string) (zapcore.Level, error) {
	switch name {
	case "error":
		return zapcore.ErrorLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "debug":
		return zapcore.DebugLevel, nil
	}
	return 0, fmt.Errorf("--log-level %q: want error, info or debug", name)
}

// usage heads --help. Installed as kubectl-startupgate, the binary is a kubectl plugin:
// `kubectl startupgate status` runs `kubectl-startupgate status`.
const usage = `Usage: gate [flags]
       gate release (--all | NODE...)
       gate status [NODE...] [-o wide|json]
       gate preflight [--config FILE]
       gate convert --from tainter|nrc FILE
       gate validate FILE...
       gate rotate-ca [--overlap 10m]

The startupgate node startup gate. release removes every rule's taint now (e.g. before
uninstalling); status shows, per node and rule, why the node is held, read live from the
API with the controller's own decision code (read access only); convert prints the rules
equal to a tainter or node-readiness-controller config (see gate convert --help); validate
checks config files (a config, a ConfigMap, Helm values) as a gate would read them at start;
preflight checks a live cluster against a config before (or after) an install: the nodes
exclude matches, the init DaemonSets against every taint of the nodes their rules select,
the webhook, and what each rule would do to each node now (read access, and a dry-run Node
CREATE); rotate-ca replaces the webhook CA the gate keeps (--cert-secret) with an overlap
in which both are trusted (see gate rotate-ca --help).
Installed on the PATH as kubectl-startupgate, it also runs as "kubectl startupgate status".

Flags:
`

// positional takes the arguments left after the flags: the node names of release and
// status, and nothing otherwise, so that a mistyped flag value cannot pass silently as an
// argument.
func (s *settings) positional(args []string) error {
	if s.statusCommand {
		s.statusNodes = args
		if _, err := labels.Parse(s.statusSelector); err != nil {
			return fmt.Errorf("status: -l %q: %w", s.statusSelector, err)
		}
		switch s.output {
		case "", "wide", "json":
			return nil
		}
		return fmt.Errorf("status: -o %q: want wide or json", s.output)
	}
	if !s.releaseCommand {
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments: %v", args)
		}
		return nil
	}
	s.releaseNodes = args
	if s.releaseAll == (len(args) > 0) {
		return fmt.Errorf("release: give either --all or node names")
	}
	return nil
}

// loadConfigFile decodes the --config file over the contract's defaults, or returns the
// defaults when there is no file. Its warnings (an unversioned file) go to stderr.
func loadConfigFile(path string, stderr io.Writer) (config.Config, error) {
	if path == "" {
		return config.DefaultConfig(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return config.Config{}, fmt.Errorf("reading --config: %w", err)
	}
	cfg, warnings, err := config.Load(data)
	if err != nil {
		return config.Config{}, fmt.Errorf("--config %s: %w", path, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "gate: warning: --config %s: %s\n", path, w)
	}
	return cfg, nil
}

// overlayEnv applies STARTUP_WEBHOOK and STARTUP_BACKFILL, the contract's env switches, which
// manifests set without touching the args.
func overlayEnv(cfg *config.Config, getenv func(string) string) error {
	for _, e := range []struct {
		name string
		dst  *bool
	}{{"STARTUP_WEBHOOK", &cfg.Webhook}, {"STARTUP_BACKFILL", &cfg.Backfill}} {
		v := getenv(e.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want 1 or 0", e.name, v)
		}
		*e.dst = b
	}
	return nil
}

// overlay copies the contract flags given on the command line onto cfg, and only those.
func (f *contractFlags) overlay(fs *pflag.FlagSet, cfg *config.Config) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if e := f.apply(fl.Name, cfg); e != nil && err == nil {
			err = e
		}
	})
	return err
}

// apply sets the Config field behind the named flag; flags that are not in the contract are
// ignored.
func (f *contractFlags) apply(name string, cfg *config.Config) error {
	switch name {
	case "webhook":
		cfg.Webhook = f.webhook
	case "backfill":
		cfg.Backfill = f.backfill
	case "pod-guard":
		cfg.PodGuard = f.podGuard
	case "min-hold":
		cfg.MinHold = metav1.Duration{Duration: f.minHold}
	case "max-hold":
		cfg.MaxHold = metav1.Duration{Duration: f.maxHold}
	case "timeout-policy":
		cfg.TimeoutPolicy = rule.TimeoutPolicy(f.timeoutPolicy)
	case "annotation-only":
		cfg.AnnotationOnly = f.annotationOnly
	case "taint":
		t, err := config.ParseTaint(f.taint)
		if err != nil {
			return fmt.Errorf("--taint: %w", err)
		}
		cfg.Taint = t
	case "node-selector":
		cfg.NodeSelector = f.nodeSelector
	case "require":
		cfg.Components = nil
		for _, r := range f.require {
			cfg.Components = append(cfg.Components, config.ParseComponent(r))
		}
	case "require-condition":
		cfg.RequiredCondition = f.condition
	}
	return nil
}

// validCerts: --cert-secret needs a directory to mint into and the Service to name, and
// each webhook configuration says its kind.
func (s *settings) validCerts() error {
	if s.certSecret == "" {
		if s.webhookService != "" || len(s.webhookConfigs) > 0 {
			return fmt.Errorf("--webhook-service and --webhook-configurations need --cert-secret")
		}
		return nil
	}
	if s.certDir == "" {
		return fmt.Errorf("--cert-secret needs --cert-dir, a directory the gate can write its serving certificate to")
	}
	if ns, name, ok := strings.Cut(s.webhookService, "/"); !ok || ns == "" || name == "" {
		return fmt.Errorf("--cert-secret needs --webhook-service NAMESPACE/NAME, got %q", s.webhookService)
	}
	for _, c := range s.webhookConfigs {
		if kind, name, _ := strings.Cut(c, "/"); kind != "mutating" && kind != "validating" || name == "" {
			return fmt.Errorf("--webhook-configurations %q: want mutating/NAME or validating/NAME", c)
		}
	}
	return nil
}

// certManager is the gate/certs Manager the cert flags describe, writing through c.
func (s *settings) certManager(c client.Client) *certs.Manager {
	ns, svc, _ := strings.Cut(s.webhookService, "/")
	m := &certs.Manager{Client: c, Namespace: ns, Secret: s.certSecret, Service: svc, Dir: s.certDir, Interval: certCheckInterval}
	for _, wc := range s.webhookConfigs {
		kind, name, _ := strings.Cut(wc, "/")
		if kind == "mutating" {
			m.Mutating = append(m.Mutating, name)
		} else {
			m.Validating = append(m.Validating, name)
		}
	}
	return m
}

// certCheckInterval is how often a gate that makes its certificate checks the caBundle and
// the serving certificate: a GitOps sync that took the caBundle out fails webhook calls
// until then.
const certCheckInterval = 15 * time.Second

// validLabelKeys: each of --cache-node-labels is a label key, or * for every label.
func validLabelKeys(keys []string) error {
	for _, k := range keys {
		if k == gate.AllLabels {
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("--cache-node-labels: %q is not a label key: %s", k, strings.Join(msgs, "; "))
		}
	}
	return nil
}

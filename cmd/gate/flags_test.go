package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	// For its -update flag only: `go test ./... -update` passes it to every test binary.
)

// env returns a getenv over a fixed map.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var ignoreCompiled = cmpopts.IgnoreUnexported(config.Config{})

func TestParseDefaults(t *testing.T) {
	s, err := parse(nil, env(), io.Discard)
	if err != nil {
		t.Fatalf("parse() = %v", err)
	}
	if diff := cmp.Diff(config.DefaultConfig(), s.cfg, ignoreCompiled); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
	want := settings{
		cfg:              s.cfg,
		leaseDuration:    15 * time.Second,
		renewDeadline:    10 * time.Second,
		retryPeriod:      2 * time.Second,
		warmStandby:      true,
		metricsAddr:      ":8080",
		probeAddr:        ":8081",
		webhookPort:      9443,
		podGuardTimeout:  3 * time.Second,
		podGuardQPS:      500,
		podGuardBurst:    1000,
		workers:          64,
		cacheSyncTimeout: 10 * time.Minute,
		nodeLabels:       []string{"kubernetes.io/os", "kubernetes.io/arch"},
		qps:              100,
		burst:            200,
		logLevel:         "info",
	}
	if diff := cmp.Diff(want, *s, cmp.AllowUnexported(settings{}), ignoreCompiled); diff != "" {
		t.Errorf("settings mismatch (-want +got):\n%s", diff)
	}
	// The returned config is validated and usable.
	if !s.cfg.Gated(&corev1.Node{}) {
		t.Errorf("default config does not gate a plain node")
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want func(c *config.Config)
		s    func(t *testing.T, s *settings) // checks the other settings
	}{
		{
			name: "min hold",
			args: []string{"--min-hold", "5s"},
			want: func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Second} },
		},
		{
			name: "max hold",
			args: []string{"--max-hold=1m"},
			want: func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: time.Minute} },
		},
		{
			name: "timeout policy keep",
			args: []string{"--timeout-policy", "keep"},
			want: func(c *config.Config) { c.TimeoutPolicy = rule.TimeoutKeep },
		},
		{
			name: "annotation only",
			args: []string{"--annotation-only"},
			want: func(c *config.Config) { c.AnnotationOnly = true },
		},
		{
			name: "autoscaler taint",
			args: []string{"--taint", "startup-taint.cluster-autoscaler.kubernetes.io/init=wait:NoSchedule"},
			want: func(c *config.Config) {
				c.Taint = corev1.Taint{Key: "startup-taint.cluster-autoscaler.kubernetes.io/init", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
			},
		},
		{
			name: "taint without value",
			args: []string{"--taint=example.com/boot:NoExecute"},
			want: func(c *config.Config) {
				c.Taint = corev1.Taint{Key: "example.com/boot", Effect: corev1.TaintEffectNoExecute}
			},
		},
		{
			name: "node selector",
			args: []string{"--node-selector", "pool in (gpu,cpu),!node-role.kubernetes.io/control-plane"},
			want: func(c *config.Config) { c.NodeSelector = "pool in (gpu,cpu),!node-role.kubernetes.io/control-plane" },
		},
		{
			name: "require twice replaces the default component",
			args: []string{"--require", "ns:app=x", "--require", "other:app=y"},
			want: func(c *config.Config) {
				c.Components = []rule.Component{
					{Name: "ns:app=x", Namespace: "ns", Selector: "app=x"},
					{Name: "other:app=y", Namespace: "other", Selector: "app=y"},
				}
			},
		},
		{
			name: "require in the --flag=value form",
			args: []string{"--require=ns:app=x"},
			want: func(c *config.Config) {
				c.Components = []rule.Component{{Name: "ns:app=x", Namespace: "ns", Selector: "app=x"}}
			},
		},
		{
			name: "require keeps the commas of a set-based selector",
			args: []string{"--require", "kube-system:app in (cni,csi)"},
			want: func(c *config.Config) {
				c.Components = []rule.Component{{Name: "kube-system:app in (cni,csi)", Namespace: "kube-system", Selector: "app in (cni,csi)"}}
			},
		},
		{
			name: "require without namespace",
			args: []string{"--require", "app=x"},
			want: func(c *config.Config) { c.Components = []rule.Component{{Name: "app=x", Selector: "app=x"}} },
		},
		{
			name: "require condition",
			args: []string{"--require-condition", "Ready=True"},
			want: func(c *config.Config) { c.RequiredCondition = "Ready=True" },
		},
		{
			name: "backfill and pod guard",
			args: []string{"--backfill", "--pod-guard"},
			want: func(c *config.Config) { c.Backfill, c.PodGuard = true, true },
		},
		{
			name: "webhook off",
			args: []string{"--webhook=false"},
			want: func(c *config.Config) { c.Webhook = false },
		},
		{
			name: "operational flags",
			args: []string{"--leader-elect", "--leader-election-namespace", "gate-system", "--metrics-bind-address", "0",
				"--health-probe-bind-address", ":9090", "--webhook-port", "10250", "--cert-dir", "/certs", "--workers", "4",
				"--kube-api-qps", "12.5", "--kube-api-burst", "25", "--print-policy",
				"--leader-elect-lease-duration", "30s", "--leader-elect-renew-deadline", "20s", "--leader-elect-retry-period", "5s",
				"--warm-standby=false", "--cache-sync-timeout", "30m", "--cache-node-labels", "gpu,example.com/pool", "--log-level", "debug",
				"--pod-guard-timeout", "5s", "--pod-guard-qps", "50", "--pod-guard-burst", "80"},
			s: func(t *testing.T, s *settings) {
				t.Helper()
				want := settings{cfg: s.cfg, leaderElect: true, leaderNS: "gate-system", metricsAddr: "0", probeAddr: ":9090",
					leaseDuration: 30 * time.Second, renewDeadline: 20 * time.Second, retryPeriod: 5 * time.Second,
					webhookPort: 10250, certDir: "/certs", podGuardTimeout: 5 * time.Second, podGuardQPS: 50, podGuardBurst: 80, workers: 4, cacheSyncTimeout: 30 * time.Minute, qps: 12.5, burst: 25, printPolicy: true,
					nodeLabels: []string{"gpu", "example.com/pool"}, logLevel: "debug"}
				if diff := cmp.Diff(want, *s, cmp.AllowUnexported(settings{}), ignoreCompiled); diff != "" {
					t.Errorf("settings mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "kubeconfig",
			args: []string{"--kubeconfig", "/home/me/.kube/config"},
			s: func(t *testing.T, s *settings) {
				t.Helper()
				if s.kubeconfig != "/home/me/.kube/config" {
					t.Errorf("kubeconfig = %q, want %q", s.kubeconfig, "/home/me/.kube/config")
				}
			},
		},
		{
			name: "kubeconfig in the --flag=value form, with --print-policy",
			args: []string{"--kubeconfig=/etc/gate/kubeconfig", "--print-policy"},
			s: func(t *testing.T, s *settings) {
				t.Helper()
				if s.kubeconfig != "/etc/gate/kubeconfig" || !s.printPolicy {
					t.Errorf("kubeconfig, printPolicy = %q, %v, want %q, true", s.kubeconfig, s.printPolicy, "/etc/gate/kubeconfig")
				}
			},
		},
		{
			name: "STARTUP_WEBHOOK=0 and STARTUP_BACKFILL=1 set the defaults",
			env:  []string{"STARTUP_WEBHOOK", "0", "STARTUP_BACKFILL", "1"},
			want: func(c *config.Config) { c.Webhook, c.Backfill = false, true },
		},
		{
			name: "STARTUP_WEBHOOK=false and STARTUP_BACKFILL=true",
			env:  []string{"STARTUP_WEBHOOK", "false", "STARTUP_BACKFILL", "true"},
			want: func(c *config.Config) { c.Webhook, c.Backfill = false, true },
		},
		{
			name: "explicit flags override env",
			args: []string{"--webhook", "--backfill=false"},
			env:  []string{"STARTUP_WEBHOOK", "0", "STARTUP_BACKFILL", "1"},
			want: func(c *config.Config) { c.Webhook, c.Backfill = true, false },
		},
		{
			name: "a flag left at its default does not undo the env",
			args: []string{"--min-hold", "5s"},
			env:  []string{"STARTUP_WEBHOOK", "0", "STARTUP_BACKFILL", "1"},
			want: func(c *config.Config) {
				c.MinHold = metav1.Duration{Duration: 5 * time.Second}
				c.Webhook, c.Backfill = false, true
			},
		},
		{
			name: "empty env is unset",
			env:  []string{"STARTUP_WEBHOOK", "", "STARTUP_BACKFILL", ""},
		},
		{
			name: "every contract flag at once",
			args: []string{"--min-hold", "5s", "--max-hold", "1m", "--timeout-policy", "keep", "--annotation-only",
				"--taint", "startup-taint.cluster-autoscaler.kubernetes.io/init=wait:NoSchedule",
				"--node-selector", "pool=gpu", "--require", "ns:app=x", "--require", "ns:app=y",
				"--require-condition", "Ready=True", "--backfill", "--pod-guard"},
			want: func(c *config.Config) {
				c.MinHold = metav1.Duration{Duration: 5 * time.Second}
				c.MaxHold = metav1.Duration{Duration: time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
				c.AnnotationOnly = true
				c.Taint = corev1.Taint{Key: "startup-taint.cluster-autoscaler.kubernetes.io/init", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
				c.NodeSelector = "pool=gpu"
				c.Components = []rule.Component{
					{Name: "ns:app=x", Namespace: "ns", Selector: "app=x"},
					{Name: "ns:app=y", Namespace: "ns", Selector: "app=y"},
				}
				c.RequiredCondition = "Ready=True"
				c.Backfill, c.PodGuard = true, true
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(tc.args, env(tc.env...), io.Discard)
			if err != nil {
				t.Fatalf("parse(%q) = %v", tc.args, err)
			}
			want := config.DefaultConfig()
			if tc.want != nil {
				tc.want(&want)
			}
			if diff := cmp.Diff(want, s.cfg, ignoreCompiled); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
			if tc.s != nil {
				tc.s(t, s)
			}
			if s.releaseCommand {
				t.Errorf("releaseCommand set without release")
			}
		})
	}
}

func TestParseConfigFile(t *testing.T) {
	file := writeFile(t, `
minHold: 1m
maxHold: 10m
timeoutPolicy: keep
webhook: false
components:
- name: cni
  namespace: kube-system
  selector: app=cni
`)
	tests := []struct {
		name string
		args []string
		env  []string
		want func(c *config.Config)
	}{
		{
			name: "file over defaults",
			args: []string{"--config", file},
			want: func(c *config.Config) {},
		},
		{
			name: "flag overrides the file",
			args: []string{"--config", file, "--min-hold", "5s", "--require", "kube-system:app=csi"},
			want: func(c *config.Config) {
				c.MinHold = metav1.Duration{Duration: 5 * time.Second}
				c.Components = []rule.Component{{Name: "kube-system:app=csi", Namespace: "kube-system", Selector: "app=csi"}}
			},
		},
		{
			name: "flag order does not matter",
			args: []string{"--max-hold", "20m", "--config", file},
			want: func(c *config.Config) { c.MaxHold = metav1.Duration{Duration: 20 * time.Minute} },
		},
		{
			name: "env overrides the file",
			args: []string{"--config", file},
			env:  []string{"STARTUP_WEBHOOK", "1", "STARTUP_BACKFILL", "1"},
			want: func(c *config.Config) { c.Webhook, c.Backfill = true, true },
		},
		{
			name: "flag overrides env, which overrides the file",
			args: []string{"--config", file, "--webhook=false", "--backfill=false"},
			env:  []string{"STARTUP_WEBHOOK", "1", "STARTUP_BACKFILL", "1"},
			want: func(c *config.Config) {},
		},
		{
			name: "flags in the --flag=value form",
			args: []string{"--config=" + file, "--min-hold=5s"},
			want: func(c *config.Config) { c.MinHold = metav1.Duration{Duration: 5 * time.Second} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(tc.args, env(tc.env...), io.Discard)
			if err != nil {
				t.Fatalf("parse(%q) = %v", tc.args, err)
			}
			want := config.DefaultConfig()
			want.MinHold = metav1.Duration{Duration: time.Minute}
			want.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
			want.TimeoutPolicy = rule.TimeoutKeep
			want.Webhook = false
			want.Components = []rule.Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}}
			tc.want(&want)
			if diff := cmp.Diff(want, s.cfg, ignoreCompiled); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	badFile := writeFile(t, "minHold: 1m\nminHolds: 2m\n")
	invalidFile := writeFile(t, "timeoutPolicy: drop\n")
	tests := []struct {
		name string
		args []string
		env  []string
		want string // substring of the error
	}{
		{"timeout policy", []string{"--timeout-policy", "drop"}, nil, "timeoutPolicy"},
		{"negative min hold", []string{"--min-hold", "-1s"}, nil, "minHold"},
		{"max hold shorter than min hold", []string{"--min-hold", "5m", "--max-hold", "1m"}, nil, "maxHold"},
		{"taint without effect", []string{"--taint", "a=b"}, nil, "--taint"},
		{"taint with unknown effect", []string{"--taint", "a=b:Sometimes"}, nil, "taint.effect"},
		{"taint with bad key", []string{"--taint", "bad key:NoSchedule"}, nil, "taint.key"},
		{"node selector", []string{"--node-selector", "pool in ("}, nil, "nodeSelector"},
		{"require with empty selector", []string{"--require", "ns:"}, nil, "components[0].selector"},
		{"require a selector of no label", []string{"--require", "a=b", "--require", "c!=d"}, nil, "components"},
		{"require condition", []string{"--require-condition", "Ready"}, nil, "requiredCondition"},
		{"bad duration", []string{"--min-hold", "soon"}, nil, "min-hold"},
		{"unknown flag", []string{"--max-holds", "1m"}, nil, "max-holds"},
		// pflag reads -config as the shorthands -c -o -n ...: long flags take two dashes.
		{"single-dash long flag", []string{"-config", "x.yaml"}, nil, "-config"},
		{"flag without its value", []string{"--config"}, nil, "config"},
		{"bool flag with a bad value", []string{"--webhook=maybe"}, nil, "webhook"},
		{"positional argument", []string{"extra"}, nil, "unexpected arguments"},
		{"bad STARTUP_WEBHOOK", nil, []string{"STARTUP_WEBHOOK", "maybe"}, "STARTUP_WEBHOOK"},
		{"bad STARTUP_BACKFILL", nil, []string{"STARTUP_BACKFILL", "yes please"}, "STARTUP_BACKFILL"},
		{"missing config file", []string{"--config", filepath.Join(t.TempDir(), "nope.yaml")}, nil, "--config"},
		{"unknown field in config file", []string{"--config", badFile}, nil, "minHolds"},
		{"invalid config file", []string{"--config", invalidFile}, nil, "timeoutPolicy"},
		{"--all outside release", []string{"--all"}, nil, "all"},
		{"pod guard timeout under the apiserver's least", []string{"--pod-guard-timeout", "500ms"}, nil, "--pod-guard-timeout 500ms"},
		{"pod guard timeout over the apiserver's most", []string{"--pod-guard-timeout", "31s"}, nil, "1s to 30s"},
		{"pod guard qps of zero", []string{"--pod-guard-qps", "0"}, nil, "--pod-guard-qps 0"},
		{"pod guard burst of zero", []string{"--pod-guard-burst", "0"}, nil, "want both above 0"},
		{"cache-node-labels with a bad key", []string{"--cache-node-labels", "kubernetes.io/os,not a key"}, nil, `"not a key" is not a label key`},
		{"several errors in one message", []string{"--timeout-policy", "drop", "--min-hold", "-1s"}, nil, "timeoutPolicy"},
		{"cert secret without a cert dir", []string{"--cert-secret", "ca", "--webhook-service", "ns/svc"}, nil, "--cert-dir"},
		{"cert secret without the service", []string{"--cert-secret", "ca", "--cert-dir", "/tmp/c"}, nil, "--webhook-service"},
		{"webhook service without a namespace", []string{"--cert-secret", "ca", "--cert-dir", "/tmp/c", "--webhook-service", "svc"}, nil, "NAMESPACE/NAME"},
		{"webhook configuration of no kind", []string{"--cert-secret", "ca", "--cert-dir", "/tmp/c", "--webhook-service", "ns/svc", "--webhook-configurations", "startupgate"}, nil, "mutating/NAME"},
		{"webhook service without cert secret", []string{"--webhook-service", "ns/svc"}, nil, "--cert-secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(tc.args, env(tc.env...), io.Discard)
			if err == nil {
				t.Fatalf("parse(%q) = %+v, want an error", tc.args, s)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse(%q) error = %q, want it to contain %q", tc.args, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("parse(%q) error spans lines: %q", tc.args, err)
			}
		})
	}
}

func TestParseHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"release", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out strings.Builder
			_, err := parse(args, env(), &out)
			if !errors.Is(err, pflag.ErrHelp) {
				t.Fatalf("parse(%q) = %v, want pflag.ErrHelp", args, err)
			}
			for _, want := range []string{"gate release (--all | NODE...)", "--min-hold duration", "--taint string",
				"--kubeconfig FILE", "--require [NAMESPACE:]SELECTOR", config.AutoscalerTaintPrefix} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("usage does not mention %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestParseRelease(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantAll   bool
		wantNodes []string
		wantErr   bool
		wantTaint string
	}{
		{name: "all", args: []string{"release", "--all"}, wantAll: true},
		{name: "names", args: []string{"release", "n1", "n2"}, wantNodes: []string{"n1", "n2"}},
		{name: "flags before names", args: []string{"release", "--taint", "example.com/boot:NoSchedule", "n1"}, wantNodes: []string{"n1"}, wantTaint: "example.com/boot"},
		{name: "all with a custom taint", args: []string{"release", "--all", "--taint=example.com/boot:NoSchedule"}, wantAll: true, wantTaint: "example.com/boot"},
		{name: "flags after names", args: []string{"release", "n1", "--taint", "example.com/boot:NoSchedule", "n2"}, wantNodes: []string{"n1", "n2"}, wantTaint: "example.com/boot"},
		{name: "names after --", args: []string{"release", "--", "n1"}, wantNodes: []string{"n1"}},
		{name: "--all after a name", args: []string{"release", "n1", "--all"}, wantErr: true},
		{name: "nothing", args: []string{"release"}, wantErr: true},
		{name: "both --all and names", args: []string{"release", "--all", "n1"}, wantErr: true},
		{name: "invalid config in release", args: []string{"release", "--all", "--timeout-policy", "x"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(tc.args, env(), io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parse(%q) error = %v, wantErr %v", tc.args, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if !s.releaseCommand {
				t.Errorf("releaseCommand = false")
			}
			if s.releaseAll != tc.wantAll {
				t.Errorf("releaseAll = %v, want %v", s.releaseAll, tc.wantAll)
			}
			if diff := cmp.Diff(tc.wantNodes, s.releaseNodes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("releaseNodes mismatch (-want +got):\n%s", diff)
			}
			wantKey := tc.wantTaint
			if wantKey == "" {
				wantKey = config.DefaultTaintKey
			}
			if s.cfg.Taint.Key != wantKey {
				t.Errorf("taint key = %q, want %q", s.cfg.Taint.Key, wantKey)
			}
		})
	}
}

// TestZapLevel: --log-level names error, info or debug; anything else is an error naming the
// flag.
func TestZapLevel(t *testing.T) {
	for _, name := range []string{"error", "info", "debug"} {
		if _, err := zapLevel(name); err != nil {
			t.Errorf("zapLevel(%q) = %v", name, err)
		}
	}
	if _, err := zapLevel("verbose"); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("zapLevel(verbose) = %v, want an error naming --log-level", err)
	}
}

// TestCertFlags: the cert flags make the certs.Manager they describe.
func TestCertFlags(t *testing.T) {
	s, err := parse([]string{"--cert-secret", "gate-ca", "--cert-dir", "/certs", "--webhook-service", "gate-ns/gate-webhook",
		"--webhook-configurations", "mutating/gate,validating/gate-pod-guard"}, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := s.certManager(nil)
	if m.Namespace != "gate-ns" || m.Service != "gate-webhook" || m.Secret != "gate-ca" || m.Dir != "/certs" ||
		!slices.Equal(m.Mutating, []string{"gate"}) || !slices.Equal(m.Validating, []string{"gate-pod-guard"}) || m.Interval <= 0 {
		t.Errorf("certManager() = %+v", m)
	}
}

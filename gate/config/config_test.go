package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/startupgate/startupgate/gate/rule"
)

// t0 is the creation time of the nodes under test.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gateTaint is the default startup taint.
var gateTaint = corev1.Taint{Key: DefaultTaintKey, Value: DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}

// validConfig returns DefaultConfig, modified by mod, validated.
func validConfig(tb testing.TB, mod func(*Config)) *Config {
	tb.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("Validate() = %v, want nil", err)
	}
	return &cfg
}

func TestValidateDefault(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	if cfg.compiled == nil {
		t.Fatalf("Validate() did not compile the config")
	}
	// The default node selector excludes AKS system-pool and control-plane nodes only.
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"plain worker", map[string]string{"kubernetes.io/os": "linux"}, true},
		{"AKS user pool", map[string]string{"kubernetes.azure.com/mode": "user"}, true},
		{"AKS system pool", map[string]string{"kubernetes.azure.com/mode": "system"}, false},
		{"control plane", map[string]string{"node-role.kubernetes.io/control-plane": ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
			if got := cfg.Gated(n); got != tc.want {
				t.Errorf("Gated(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*Config)
		field string // the error must name it
	}{
		{"empty taint key", func(c *Config) { c.Taint.Key = "" }, "taint.key"},
		{"taint key with spaces", func(c *Config) { c.Taint.Key = "not a key" }, "taint.key"},
		{"taint key with bad prefix", func(c *Config) { c.Taint.Key = "Bad_Prefix/x" }, "taint.key"},
		{"taint value", func(c *Config) { c.Taint.Value = "no spaces allowed" }, "taint.value"},
		{"empty taint effect", func(c *Config) { c.Taint.Effect = "" }, "taint.effect"},
		{"unknown taint effect", func(c *Config) { c.Taint.Effect = "NoWay" }, "taint.effect"},
		{"taint timeAdded", func(c *Config) { c.Taint.TimeAdded = &metav1.Time{Time: t0} }, "taint.timeAdded"},
		{"readyAnnotation", func(c *Config) { c.ReadyAnnotation = "bad key" }, "readyAnnotation"},
		{"completedAnnotation", func(c *Config) { c.CompletedAnnotation = "" }, "completedAnnotation"},
		{"nodeSelector syntax", func(c *Config) { c.NodeSelector = "a in (" }, "nodeSelector"},
		{"nodeSelector bad key", func(c *Config) { c.NodeSelector = "bad key=x" }, "nodeSelector"},
		{"no components", func(c *Config) { c.Components = nil }, "components"},
		{"empty component selector", func(c *Config) { c.Components = []rule.Component{{Selector: ""}} }, "components[0].selector"},
		{"invalid component selector", func(c *Config) { c.Components = []rule.Component{{Selector: "app in ("}} }, "components[0].selector"},
		{"second component selector", func(c *Config) {
			c.Components = []rule.Component{{Selector: "app=a"}, {Selector: "=x"}}
		}, "components[1].selector"},
		{"component namespace", func(c *Config) {
			c.Components = []rule.Component{{Namespace: "Kube_System", Selector: "app=a"}}
		}, "components[0].namespace"},
		{"only negative requirements", func(c *Config) {
			c.Components = []rule.Component{{Selector: "app!=web"}}
		}, "components"},
		{"only negative requirements, beside another component", func(c *Config) {
			c.Components = []rule.Component{{Selector: "a=b"}, {Selector: "app!=web"}}
		}, "components"},
		{"requiredCondition without status", func(c *Config) { c.RequiredCondition = "Ready" }, "requiredCondition"},
		{"requiredCondition without type", func(c *Config) { c.RequiredCondition = "=True" }, "requiredCondition"},
		{"requiredCondition bad status", func(c *Config) { c.RequiredCondition = "Ready=Yes" }, "requiredCondition"},
		{"negative minHold", func(c *Config) { c.MinHold = metav1.Duration{Duration: -time.Second} }, "minHold"},
		{"negative maxHold", func(c *Config) { c.MaxHold = metav1.Duration{Duration: -time.Second} }, "maxHold"},
		{"maxHold shorter than minHold", func(c *Config) {
			c.MinHold = metav1.Duration{Duration: time.Minute}
			c.MaxHold = metav1.Duration{Duration: 30 * time.Second}
		}, "maxHold"},
		{"empty timeoutPolicy", func(c *Config) { c.TimeoutPolicy = "" }, "timeoutPolicy"},
		{"unknown timeoutPolicy", func(c *Config) { c.TimeoutPolicy = "drop" }, "timeoutPolicy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %s", tc.field)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("Validate() = %q, want it to name field %q", err, tc.field)
			}
			if cfg.compiled != nil {
				t.Errorf("Validate() compiled an invalid config")
			}
		})
	}
}

// TestPlacedAnnotationErrors: a placed-taint mark's key the apiserver would refuse is
// reported where the operator can fix it, never as the completion annotation's: a bad
// placedAnnotation under its own name, once, and a good one that a rule's record makes too
// long under that rule's taint key, naming placedAnnotation.
func TestPlacedAnnotationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, placed, field string
	}{
		{"a base the apiserver refuses", "example.com/placed~x", "placedAnnotation:"},
		{"a base the record makes too long", "example.com/" + strings.Repeat("p", 60), "taint.key:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PlacedAnnotation = tc.placed
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %s", tc.field)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.field) || !strings.Contains(msg, tc.placed) {
				t.Errorf("Validate() = %q, want it to name %s and %q", msg, tc.field, tc.placed)
			}
			if strings.Contains(msg, "completedAnnotation") {
				t.Errorf("Validate() = %q: blames the completion annotation for the placed mark", msg)
			}
			if n := strings.Count(msg, "\n") + 1; n != 1 {
				t.Errorf("Validate() = %q: %d errors, want 1", msg, n)
			}
		})
	}
}

// TestValidateErrorOrder pins how several errors are reported: all at once, one line each,
// in field order; and the Pod scopes' error only when nothing before it failed.
func TestValidateErrorOrder(t *testing.T) {
	noCommonKey := []rule.Component{{Selector: "a=b"}, {Selector: "c!=d"}} // the second selects no Pod scope
	tests := []struct {
		name string
		mod  func(*Config)
		want []string // the field each line names, in order
	}{
		{"every concern at once", func(c *Config) {
			c.Taint.Effect = ""
			c.NodeSelector = "bad key=x"
			c.Components = []rule.Component{{Selector: "x in ("}}
			c.RequiredCondition = "Ready=Yes"
			c.MinHold = metav1.Duration{Duration: -time.Second}
			c.TimeoutPolicy = "drop"
		}, []string{"taint.effect", "nodeSelector", "components[0].selector", "requiredCondition", "minHold", "timeoutPolicy"}},
		{"both annotations", func(c *Config) {
			c.ReadyAnnotation, c.CompletedAnnotation = "bad key", "bad key"
		}, []string{"readyAnnotation", "completedAnnotation"}},
		{"no common key with later errors", func(c *Config) {
			c.Components = noCommonKey
			c.TimeoutPolicy = "drop"
		}, []string{"components", "timeoutPolicy"}},
		{"no common key after a taint error", func(c *Config) {
			c.Components = noCommonKey
			c.Taint.Effect = "x"
		}, []string{"taint.effect"}},
		{"no common key after a namespace error", func(c *Config) {
			c.Components = []rule.Component{{Namespace: "Bad_NS", Selector: "a=b"}, {Selector: "c=d"}}
		}, []string{"components[0].namespace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want errors naming %v", tc.want)
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				field, _, _ := strings.Cut(line, ": ")
				got = append(got, field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate() fields mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"autoscaler startup taint prefix", func(c *Config) { c.Taint.Key = AutoscalerTaintPrefix + "init" }},
		{"empty taint value", func(c *Config) { c.Taint.Value = "" }},
		{"NoExecute", func(c *Config) { c.Taint.Effect = corev1.TaintEffectNoExecute }},
		{"PreferNoSchedule", func(c *Config) { c.Taint.Effect = corev1.TaintEffectPreferNoSchedule }},
		{"empty node selector gates every node", func(c *Config) { c.NodeSelector = "" }},
		{"maxHold equal to minHold", func(c *Config) {
			c.MinHold = metav1.Duration{Duration: time.Minute}
			c.MaxHold = metav1.Duration{Duration: time.Minute}
		}},
		{"minHold without maxHold", func(c *Config) { c.MinHold = metav1.Duration{Duration: time.Hour} }},
		{"keep policy", func(c *Config) { c.TimeoutPolicy = rule.TimeoutKeep }},
		{"required condition Unknown", func(c *Config) { c.RequiredCondition = "NetworkUnavailable=False" }},
		{"set-based component selectors sharing a key", func(c *Config) {
			c.Components = []rule.Component{{Selector: "app in (cni,csi)"}, {Namespace: "kube-system", Selector: "app"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

func TestAutoscalerTaintPrefix(t *testing.T) {
	cfg := validConfig(t, func(c *Config) {
		c.Taint = corev1.Taint{Key: AutoscalerTaintPrefix + "init", Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	})
	tests := []struct {
		name   string
		taints []corev1.Taint
		want   bool
	}{
		{"exact taint", []corev1.Taint{{Key: AutoscalerTaintPrefix + "init", Value: "wait", Effect: corev1.TaintEffectNoSchedule}}, true},
		{"other value still counts", []corev1.Taint{{Key: AutoscalerTaintPrefix + "init", Value: "true", Effect: corev1.TaintEffectNoSchedule}}, true},
		{"among other taints", []corev1.Taint{
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
			{Key: AutoscalerTaintPrefix + "init", Effect: corev1.TaintEffectNoSchedule},
		}, true},
		{"other effect", []corev1.Taint{{Key: AutoscalerTaintPrefix + "init", Value: "wait", Effect: corev1.TaintEffectNoExecute}}, false},
		{"other autoscaler startup taint", []corev1.Taint{{Key: AutoscalerTaintPrefix + "gpu", Effect: corev1.TaintEffectNoSchedule}}, false},
		{"default gate taint", []corev1.Taint{gateTaint}, false},
		{"no taints", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tc.taints}}
			if got := cfg.HasTaint(n); got != tc.want {
				t.Errorf("HasTaint(%v) = %v, want %v", tc.taints, got, tc.want)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	def := DefaultConfig()
	tests := []struct {
		name    string
		yaml    string
		want    func() Config
		wantErr string
	}{
		{name: "empty file is the default", yaml: "", want: DefaultConfig},
		{name: "whitespace only is the default", yaml: "\n  \n", want: DefaultConfig},
		{
			name: "unset fields keep their defaults",
			yaml: "minHold: 30s\nmaxHold: 10m\ntimeoutPolicy: keep\n",
			want: func() Config {
				c := DefaultConfig()
				c.MinHold = metav1.Duration{Duration: 30 * time.Second}
				c.MaxHold = metav1.Duration{Duration: 10 * time.Minute}
				c.TimeoutPolicy = rule.TimeoutKeep
				return c
			},
		},
		{
			name: "a partial taint keeps the default value and effect",
			yaml: "taint:\n  key: " + AutoscalerTaintPrefix + "init\n",
			want: func() Config {
				c := DefaultConfig()
				c.Taint.Key = AutoscalerTaintPrefix + "init"
				return c
			},
		},
		{
			name: "components replace the default list",
			yaml: "components:\n- name: cni\n  namespace: kube-system\n  selector: app=cni\n- selector: app=csi\nwebhook: false\nbackfill: true\npodGuard: true\nannotationOnly: true\nrequiredCondition: Ready=True\nnodeSelector: pool=gpu\n",
			want: func() Config {
				c := DefaultConfig()
				c.Components = []rule.Component{{Name: "cni", Namespace: "kube-system", Selector: "app=cni"}, {Selector: "app=csi"}}
				c.Webhook, c.Backfill, c.PodGuard, c.AnnotationOnly = false, true, true, true
				c.RequiredCondition = "Ready=True"
				c.NodeSelector = "pool=gpu"
				return c
			},
		},
		{name: "unknown top-level field", yaml: "minHold: 30s\nmaxHolds: 10m\n", wantErr: "maxHolds"},
		// Kubernetes field names are case-sensitive; strict decoding must not map a
		// wrongly-cased key onto a field (sigs.k8s.io/json semantics). KNOWN BUG: LoadConfig
		// uses encoding/json (via sigs.k8s.io/yaml), which matches keys case-insensitively.
		{name: "wrongly-cased field", yaml: "maxhold: 10m\n", wantErr: "maxhold"},
		{name: "same field twice in different case", yaml: "maxHold: 1h\nmaxhold: 1m\n", wantErr: "maxhold"},
		{name: "unknown nested field", yaml: "taint:\n  key: a\n  efect: NoSchedule\n", wantErr: "efect"},
		{name: "unknown component field", yaml: "components:\n- selector: app=x\n  namespaces: [a]\n", wantErr: "namespaces"},
		{name: "bad duration", yaml: "minHold: soon\n", wantErr: "decoding config"},
		{name: "not YAML", yaml: "{{{", wantErr: "decoding config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadConfig([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadConfig() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig() = %v, want nil", err)
			}
			if diff := cmp.Diff(tc.want(), got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
				t.Errorf("LoadConfig() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// LoadConfig must not mutate the package defaults through shared slices.
	if diff := cmp.Diff(def, DefaultConfig(), cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("DefaultConfig() changed after LoadConfig (-want +got):\n%s", diff)
	}
}

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in      string
		want    corev1.Taint
		wantErr bool
	}{
		{in: "startup.k8s.io/initializing=wait:NoSchedule", want: gateTaint},
		{in: "a=b:NoExecute", want: corev1.Taint{Key: "a", Value: "b", Effect: corev1.TaintEffectNoExecute}},
		{in: "a:PreferNoSchedule", want: corev1.Taint{Key: "a", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "a=:NoSchedule", want: corev1.Taint{Key: "a", Effect: corev1.TaintEffectNoSchedule}},
		{in: AutoscalerTaintPrefix + "init=wait:NoSchedule", want: corev1.Taint{Key: AutoscalerTaintPrefix + "init", Value: "wait", Effect: corev1.TaintEffectNoSchedule}},
		{in: "a=b", wantErr: true},
		{in: "a", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTaint(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseTaint(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTaint(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
			// What --taint parses must round-trip through the taint's own string form.
			if got.ToString() != strings.Replace(tc.in, "=:", ":", 1) {
				t.Errorf("ParseTaint(%q).ToString() = %q", tc.in, got.ToString())
			}
		})
	}
}

func TestParseComponent(t *testing.T) {
	tests := []struct {
		in   string
		want rule.Component
	}{
		{"app=cni", rule.Component{Name: "app=cni", Selector: "app=cni"}},
		{"kube-system:app=cni", rule.Component{Name: "kube-system:app=cni", Namespace: "kube-system", Selector: "app=cni"}},
		{"kube-system:app in (cni,csi)", rule.Component{Name: "kube-system:app in (cni,csi)", Namespace: "kube-system", Selector: "app in (cni,csi)"}},
		{DefaultInitLabel, rule.Component{Name: DefaultInitLabel, Selector: DefaultInitLabel}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParseComponent(tc.in)); diff != "" {
				t.Errorf("ParseComponent(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestPodScopes: the Pods the gate caches are the components' and no others: one label key
// the components share, or else each component's own selector, in its namespace.
func TestPodScopes(t *testing.T) {
	tests := []struct {
		name       string
		components []rule.Component
		want       []string // namespace/selector
	}{
		{"default", nil, []string{"/startup.k8s.io/component"}},
		{"one namespaced component", []rule.Component{{Namespace: "kube-system", Selector: "app=cni"}}, []string{"kube-system/app"}},
		{"several components, one namespace", []rule.Component{
			{Namespace: "kube-system", Selector: "app=cni,tier=node"},
			{Namespace: "kube-system", Selector: "app=csi"},
		}, []string{"kube-system/app"}},
		{"several components, several namespaces", []rule.Component{
			{Namespace: "kube-system", Selector: "app=cni"},
			{Namespace: "monitoring", Selector: "app=agent"},
		}, []string{"/app"}},
		{"one namespaced and one cluster-wide component", []rule.Component{
			{Namespace: "kube-system", Selector: "app=cni"},
			{Selector: "app=agent"},
		}, []string{"/app"}},
		{"several common keys: the smallest is chosen", []rule.Component{
			{Selector: "tier=node,app=cni"},
			{Selector: "app=csi,tier=node"},
		}, []string{"/app"}},
		{"negative requirements do not select the cache", []rule.Component{
			{Selector: "app!=cni,startup=yes"},
			{Selector: "app=csi,startup in (yes)"},
		}, []string{"/startup"}},
		{"existence requirement", []rule.Component{
			{Selector: "startup.k8s.io/component"},
			{Selector: "startup.k8s.io/component=gpu"},
		}, []string{"/startup.k8s.io/component"}},
		{"the GPU operator's, a CNI's and a CSI driver's own labels", []rule.Component{
			{Namespace: "gpu-operator", Selector: "app=nvidia-driver-daemonset"},
			{Namespace: "kube-system", Selector: "k8s-app=cilium"},
			{Namespace: "kube-system", Selector: "app=ebs-csi-node"},
		}, []string{"gpu-operator/app=nvidia-driver-daemonset", "kube-system/k8s-app=cilium", "kube-system/app=ebs-csi-node"}},
		{"no key in common, no namespace named", []rule.Component{
			{Selector: "startup.k8s.io/component=init"},
			{Selector: "k8s-app=cilium"},
			{Selector: "startup.k8s.io/component=init,tier=node"},
		}, []string{"/startup.k8s.io/component=init", "/k8s-app=cilium", "/startup.k8s.io/component=init,tier=node"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t, func(c *Config) {
				if tc.components != nil {
					c.Components = tc.components
				}
			})
			var got []string
			for _, sc := range cfg.PodScopes() {
				got = append(got, sc.Namespace+"/"+sc.Selector.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodScopes() (-want +got):\n%s", diff)
			}
			// Every component's Pods must be in a scope of its namespace (or of all).
			sels, nss := cfg.EffectiveRules()[0].Selectors()
			for i, sel := range sels {
				reqs, _ := sel.Requirements()
				lbls := map[string]string{}
				for _, r := range reqs {
					if v := r.Values().UnsortedList(); len(v) > 0 {
						lbls[r.Key()] = v[0]
					} else {
						lbls[r.Key()] = ""
					}
				}
				in := slices.ContainsFunc(cfg.PodScopes(), func(sc rule.PodScope) bool {
					return (sc.Namespace == "" || sc.Namespace == nss[i]) && sc.Selector.Matches(labels.Set(lbls))
				})
				if sel.Matches(labels.Set(lbls)) && !in {
					t.Errorf("component %d selects %v in %q, which no Pod scope holds", i, lbls, nss[i])
				}
			}
		})
	}
}

func TestTolerates(t *testing.T) {
	cfg := validConfig(t, nil)
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		want        bool
	}{
		{"none", nil, false},
		{"Exists on the key, any effect", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpExists}}, true},
		{"Exists on the key and effect", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, true},
		{"Exists on everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, true},
		{"Equal with the value", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpEqual, Value: DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule}}, true},
		{"empty operator means Equal", []corev1.Toleration{{Key: DefaultTaintKey, Value: DefaultTaintValue}}, true},
		{"Equal with another value", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpEqual, Value: "other", Effect: corev1.TaintEffectNoSchedule}}, false},
		{"Exists with the wrong effect", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, false},
		{"Equal with the wrong effect", []corev1.Toleration{{Key: DefaultTaintKey, Operator: corev1.TolerationOpEqual, Value: DefaultTaintValue, Effect: corev1.TaintEffectPreferNoSchedule}}, false},
		{"another key", []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}, false},
		{"one of several", []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists},
			{Key: DefaultTaintKey, Operator: corev1.TolerationOpExists},
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfg.Tolerates(tc.tolerations); got != tc.want {
				t.Errorf("Tolerates(%v) = %v, want %v", tc.tolerations, got, tc.want)
			}
		})
	}
}

// TestUnvalidatedConfigPanics documents that using a Config before Validate is a
// programming error, caught at once rather than deciding on uncompiled selectors.
func TestUnvalidatedConfigPanics(t *testing.T) {
	cfg := DefaultConfig()
	defer func() {
		if recover() == nil {
			t.Errorf("EffectiveRules() of an unvalidated Config did not panic")
		}
	}()
	cfg.EffectiveRules()
}

func TestLoadVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		warning string // substring of the one warning, "" for none
		err     string // substring of the error, "" for none
	}{
		{name: "versioned", in: "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\nminHold: 30s\n"},
		{name: "versioned, nothing else", in: "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\n"},
		{name: "empty file", in: ""},
		{name: "unversioned", in: "minHold: 30s\n", warning: `add "apiVersion: config.startupgate.io/v1alpha1" and "kind: GateConfiguration"`},
		{name: "unversioned, empty object", in: "{}\n", warning: "deprecated"},
		{name: "another version", in: "apiVersion: config.startupgate.io/v1beta1\nkind: GateConfiguration\n",
			err: `config apiVersion "config.startupgate.io/v1beta1": this gate reads config.startupgate.io/v1alpha1`},
		{name: "another group", in: "apiVersion: v1\nkind: GateConfiguration\n", err: `apiVersion "v1"`},
		{name: "kind without apiVersion", in: "kind: GateConfiguration\n", err: "config apiVersion missing"},
		{name: "apiVersion without kind", in: "apiVersion: config.startupgate.io/v1alpha1\n", err: "config kind missing"},
		{name: "another kind", in: "apiVersion: config.startupgate.io/v1alpha1\nkind: ConfigMap\n", err: `config kind "ConfigMap": a config.startupgate.io/v1alpha1 file is a GateConfiguration`},
		{name: "wrongly cased apiVersion", in: "apiversion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\n", err: "config apiVersion missing"},
		{name: "unknown field of a versioned file", in: "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\nminhold: 30s\n", err: "unknown field"},
		{name: "not an object", in: "- a\n", err: "decoding config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warnings, err := Load([]byte(tc.in))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load() error = %v, want one containing %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatalf("Load() error = %v", err)
			}
			if cfg.APIVersion != APIVersion || cfg.Kind != Kind {
				t.Errorf("Load() = apiVersion %q kind %q, want this version's", cfg.APIVersion, cfg.Kind)
			}
			switch {
			case tc.warning == "" && len(warnings) > 0:
				t.Errorf("Load() warnings = %q, want none", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)):
				t.Errorf("Load() warnings = %q, want one containing %q", warnings, tc.warning)
			}
		})
	}
}

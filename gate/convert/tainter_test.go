package convert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// tainterMatcherTOML is one matcher; the tests below vary it.
const tainterMatcherTOML = `
[[reconciler.matchers]]
[reconciler.matchers.taint]
effect = "NoSchedule"
key = "example.com/nic"
value = "kaput"
[[reconciler.matchers.conditions]]
type = "NetworkInterfaceCard"
status = "Kaput"
`

var ignoreCompiled = cmpopts.IgnoreUnexported(rule.Rule{})

func TestTainterRule(t *testing.T) {
	o, err := Tainter([]byte(tainterMatcherTOML))
	if err != nil {
		t.Fatalf("Tainter() = %v", err)
	}
	want := []rule.Rule{{
		Name:           "nic",
		Mode:           rule.Condition,
		Taint:          corev1.Taint{Key: "example.com/nic", Value: "kaput", Effect: corev1.TaintEffectNoSchedule},
		Match:          []rule.Match{{Type: "NetworkInterfaceCard", Status: "(?s:.*)(?:Kaput)(?s:.*)"}},
		KeepAfterClear: true,
	}}
	if diff := cmp.Diff(want, rules(o), ignoreCompiled); diff != "" {
		t.Errorf("rules mismatch (-want +got):\n%s", diff)
	}
	// Only NoExecute rules have a budget, so only they are told about it.
	if c := strings.Join(o.Rules[0].Comments, "\n"); strings.Contains(c, "maxTainted") {
		t.Errorf("a NoSchedule rule's comments mention the eviction budget:\n%s", c)
	}
}

func TestTainterErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string
	}{
		{"unknown top-level key", "[metrics]\nport = 1\n" + tainterMatcherTOML, "unknown keys metrics, metrics.port"},
		{"unknown matcher key", strings.Replace(tainterMatcherTOML, `value = "kaput"`, "value = \"kaput\"\ntime_added = 1", 1), "unknown keys reconciler.matchers.taint.time_added"},
		{"unknown condition key", tainterMatcherTOML + "reason = \"x\"\n", "unknown keys reconciler.matchers.conditions.reason"},
		{"not TOML", "server = {", "decoding tainter config"},
		{"no matchers", "[log]\nmax_level = \"info\"\n", "reconciler.matchers: none"},
		{"type is a regex", strings.Replace(tainterMatcherTOML, `"NetworkInterfaceCard"`, `"Network.*"`, 1), `reconciler.matchers[0].conditions[0].type: "Network.*" is a regular expression`},
		{"empty type", strings.Replace(tainterMatcherTOML, `"NetworkInterfaceCard"`, `""`, 1), "reconciler.matchers[0].conditions[0].type: empty"},
		{"status Rust reads otherwise", strings.Replace(tainterMatcherTOML, `"Kaput"`, `'\d'`, 1), `reconciler.matchers[0].conditions[0].status: "\\d": \d is Unicode-aware`},
		{"no conditions", "[[reconciler.matchers]]\n[reconciler.matchers.taint]\neffect = \"NoSchedule\"\nkey = \"a\"\nvalue = \"b\"\n", "reconciler.matchers[0].conditions: none"},
		{"empty value", strings.Replace(tainterMatcherTOML, `value = "kaput"`, `value = ""`, 1), "reconciler.matchers[0].taint.value: empty"},
		{"same taint twice", tainterMatcherTOML + tainterMatcherTOML, `reconciler.matchers[1].taint.key: "example.com/nic": matchers[0] adds the same taint`},
		{"bad port", "[server]\nhost = \"0.0.0.0\"\nport = \"http\"\n" + tainterMatcherTOML, "server.port: http"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Tainter([]byte(tc.toml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Tainter() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTainterRefusedByTheGate is a matcher that converts but that the gate refuses: the
// conversion fails with the gate's own error, not at start-up.
func TestTainterRefusedByTheGate(t *testing.T) {
	o, err := Tainter([]byte(strings.Replace(tainterMatcherTOML, `"NoSchedule"`, `"Sometimes"`, 1)))
	if err != nil {
		t.Fatalf("Tainter() = %v", err)
	}
	_, err = YAML(o)
	if want := `rules[0] "nic".taint.effect: "Sometimes"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("YAML() = %v, want an error containing %q", err, want)
	}
}

func TestTainterServerPort(t *testing.T) {
	for _, port := range []string{`8080`, `"8080"`} {
		o, err := Tainter([]byte("[server]\nhost = \"::\"\nport = " + port + "\n" + tainterMatcherTOML))
		if err != nil {
			t.Fatalf("port = %s: %v", port, err)
		}
		if h := strings.Join(o.Header, "\n"); !strings.Contains(h, "--health-probe-bind-address=[::]:8080") {
			t.Errorf("port = %s: header does not give the probe address:\n%s", port, h)
		}
	}
}

func TestTainterName(t *testing.T) {
	taken := map[string]bool{}
	tests := []struct{ key, want string }{
		{"pressure", "pressure"},
		{"node.kubernetes.io/out-of-service", "out-of-service"},
		{"example.com/Out_Of_Service", "out-of-service-2"},
		{"example.com/__", "tainter-3"},
		{"x/" + strings.Repeat("a", 70), strings.Repeat("a", 63)},
		{"y/" + strings.Repeat("a", 70), strings.Repeat("a", 59) + "-2"},
	}
	for i, tc := range tests {
		if got := tainterName(tc.key, i, taken); got != tc.want {
			t.Errorf("tainterName(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func rules(o *Output) []rule.Rule {
	out := make([]rule.Rule, len(o.Rules))
	for i := range o.Rules {
		out[i] = o.Rules[i].Rule
	}
	return out
}

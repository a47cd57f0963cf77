package convert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// TestRenderRoundTrip: what render writes decodes back, through config.LoadConfig, to the
// very rules converted: no field a converter sets is lost on the way out.
func TestRenderRoundTrip(t *testing.T) {
	o := &Output{Header: []string{"a", "", "b"}, Rules: []Rule{
		{Comments: []string{"tainter"}, Rule: rule.Rule{Name: "nic", Mode: rule.Condition,
			Taint:          corev1.Taint{Key: "example.com/nic", Value: "kaput", Effect: corev1.TaintEffectNoExecute},
			Match:          []rule.Match{{Type: "NIC", Status: `(?s:.*)(?:Kaput|'Ruined": #x)(?s:.*)`}, {Type: "PrivateLink", Status: "severed"}},
			KeepAfterClear: true}},
		{Rule: rule.Rule{Name: "cni", Mode: rule.Continuous, DryRun: true, NodeSelector: "!node-role.kubernetes.io/control-plane,a in (b,c)",
			Taint:      corev1.Taint{Key: "readiness.k8s.io/NetworkReady", Effect: corev1.TaintEffectNoSchedule},
			Conditions: []rule.ConditionRequirement{rule.ParseConditionRequirement("a.io/Ready=True"), rule.ParseConditionRequirement("Other=False")}}},
	}}
	out, err := YAML(o)
	if err != nil {
		t.Fatalf("YAML() = %v", err)
	}
	cfg, err := config.LoadConfig(out)
	if err != nil {
		t.Fatalf("LoadConfig() = %v\n%s", err, out)
	}
	if diff := cmp.Diff(rules(o), cfg.Rules, ignoreCompiled); diff != "" {
		t.Errorf("rules mismatch (-want +got):\n%s\n%s", diff, out)
	}
	// The budget is the gate's default, not written: the comment says how to change it.
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.EffectiveRules()[0].MaxTainted; *got != intstr.FromString("10%") {
		t.Errorf("maxTainted = %v, want the default 10%%", got)
	}
}

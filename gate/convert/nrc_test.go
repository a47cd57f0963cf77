package convert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/rule"
)

// nrcRuleYAML is one NodeReadinessRule; the tests below vary it.
const nrcRuleYAML = `apiVersion: readiness.node.x-k8s.io/v1alpha1
kind: NodeReadinessRule
metadata:
  name: cni
spec:
  conditions:
    - type: projectcalico.org/CalicoReady
      requiredStatus: "True"
  taint:
    key: readiness.k8s.io/NetworkReady
    effect: NoSchedule
  enforcementMode: continuous
  nodeSelector:
    matchExpressions:
      - key: node-role.kubernetes.io/control-plane
        operator: DoesNotExist
`

// withDefault is r with its first condition's defaultStatus set.
func withDefault(r rule.Rule, status corev1.ConditionStatus) rule.Rule {
	r.Conditions = append([]rule.ConditionRequirement(nil), r.Conditions...)
	r.Conditions[0].DefaultStatus = status
	return r
}

func TestNRCRules(t *testing.T) {
	cni := rule.Rule{
		Name: "cni", Mode: rule.Continuous, NodeSelector: "!node-role.kubernetes.io/control-plane",
		Taint:      corev1.Taint{Key: "readiness.k8s.io/NetworkReady", Effect: corev1.TaintEffectNoSchedule},
		Conditions: []rule.ConditionRequirement{rule.ParseConditionRequirement("projectcalico.org/CalicoReady=True")},
	}
	boot := cni
	boot.Name, boot.Mode, boot.DryRun = "boot", rule.Startup, true
	bootYAML := strings.NewReplacer("name: cni", "name: boot", "enforcementMode: continuous", "enforcementMode: bootstrap-only\n  dryRun: true").Replace(nrcRuleYAML)
	item := func(s string) string { return "  - " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n" }
	tests := []struct {
		name string
		yaml string
		want []rule.Rule
	}{
		{"one rule", nrcRuleYAML, []rule.Rule{cni}},
		{"documents", "---\n" + nrcRuleYAML + "---\n" + bootYAML + "---\n", []rule.Rule{cni, boot}},
		{"List", "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n" + item(nrcRuleYAML) + item(bootYAML), []rule.Rule{cni, boot}},
		{"with status", nrcRuleYAML + "status:\n  observedGeneration: 1\n  appliedNodes: [a]\n", []rule.Rule{cni}},
		{"allOf, defaultStatus that does not meet the requirement", strings.Replace(nrcRuleYAML, `requiredStatus: "True"`, "requiredStatus: \"True\"\n      defaultStatus: \"False\"\n  conditionPolicy: allOf", 1), []rule.Rule{withDefault(cni, corev1.ConditionFalse)}},
		{"defaultStatus that meets the requirement: an absent condition holds", strings.Replace(nrcRuleYAML, `requiredStatus: "True"`, "requiredStatus: \"True\"\n      defaultStatus: \"True\"", 1),
			[]rule.Rule{withDefault(cni, corev1.ConditionTrue)}},
		{"Unknown required, no defaultStatus: NRC's implicit Unknown is written out", strings.Replace(nrcRuleYAML, `requiredStatus: "True"`, "requiredStatus: Unknown", 1),
			[]rule.Rule{func() rule.Rule {
				r := withDefault(cni, corev1.ConditionUnknown)
				r.Conditions[0].Status = corev1.ConditionUnknown
				return r
			}()}},
		{"no node selector", strings.Split(nrcRuleYAML, "  nodeSelector:")[0], []rule.Rule{func() rule.Rule { r := cni; r.NodeSelector = ""; return r }()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NRC([]byte(tc.yaml))
			if err != nil {
				t.Fatalf("NRC() = %v", err)
			}
			if diff := cmp.Diff(tc.want, rules(o), ignoreCompiled); diff != "" {
				t.Errorf("rules mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNRCErrors(t *testing.T) {
	edit := func(from, to string) string { return strings.Replace(nrcRuleYAML, from, to, 1) }
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"anyOf", edit("  enforcementMode:", "  conditionPolicy: anyOf\n  enforcementMode:"), `"cni": spec.conditionPolicy: "anyOf"`},
		{"continuous NoExecute", edit("effect: NoSchedule", "effect: NoExecute"), `spec.taint.effect: "NoExecute" with enforcementMode continuous: a continuous gate rule uses NoSchedule only`},
		{"continuous PreferNoSchedule", edit("effect: NoSchedule", "effect: PreferNoSchedule"), "a continuous gate rule uses NoSchedule only"},
		{"no enforcement mode", edit("  enforcementMode: continuous\n", ""), `spec.enforcementMode: "": want bootstrap-only or continuous`},
		{"bad defaultStatus", edit(`requiredStatus: "True"`, "requiredStatus: \"True\"\n      defaultStatus: Maybe"), `spec.conditions[0].defaultStatus: "Maybe"`},
		{"type with =", edit("type: projectcalico.org/CalicoReady", "type: a=b"), `spec.conditions[0].type: "a=b"`},
		{"bad required status", edit(`requiredStatus: "True"`, "requiredStatus: Maybe"), "spec.conditions[0].requiredStatus"},
		{"timeAdded", edit("effect: NoSchedule", "effect: NoSchedule\n    timeAdded: \"2024-01-01T00:00:00Z\""), "spec.taint.timeAdded"},
		{"bad selector operator", edit("operator: DoesNotExist", "operator: Near"), "spec.nodeSelector"},
		{"unknown spec field", edit("  enforcementMode:", "  gracePeriod: 5m\n  enforcementMode:"), `unknown field "spec.gracePeriod"`},
		{"unknown condition field", edit(`requiredStatus: "True"`, "requiredStatus: \"True\"\n      reason: x"), `unknown field "spec.conditions[0].reason"`},
		{"wrong kind", edit("kind: NodeReadinessRule", "kind: ConfigMap"), "want a readiness.node.x-k8s.io/v1alpha1 NodeReadinessRule"},
		{"wrong version", edit("v1alpha1", "v1beta9"), "readiness.node.x-k8s.io/v1beta9 NodeReadinessRule: want"},
		{"bad list item", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n", "document 0: items[0]: v1 Pod"},
		{"nothing", "---\n", "nothing to convert"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NRC([]byte(tc.yaml))
			if err == nil {
				_, err = YAML(o)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NRC() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestNRCRefusedByTheGate: NRC allows a rule name the gate does not (a DNS subdomain) and
// two rules on the same taint key with different effects; the conversion fails with the
// gate's own error.
func TestNRCRefusedByTheGate(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{strings.Replace(nrcRuleYAML, "name: cni", "name: cni.v2", 1), `rules[0] "cni.v2".name`},
		{nrcRuleYAML + "---\n" + strings.Replace(nrcRuleYAML, "name: cni", "name: cni2", 1), `rules[1].taint.key: "readiness.k8s.io/NetworkReady": rules[0] has the same taint key`},
	} {
		o, err := NRC([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("NRC() = %v", err)
		}
		if _, err := YAML(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("YAML() = %v, want an error containing %q", err, tc.want)
		}
	}
}

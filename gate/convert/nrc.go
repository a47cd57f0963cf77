package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// The NodeReadinessRule API the converter reads: readiness.node.x-k8s.io/v1alpha1, as
// node-readiness-controller v0.5.0 defines it (api/v1alpha1/nodereadinessrule_types.go).
// The types are copied, not imported: that module pins its own Kubernetes versions.
const nrcAPIVersion = "readiness.node.x-k8s.io/v1alpha1"

type nrcRule struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            nrcSpec           `json:"spec"`
	// Status is what the controller observed, not configuration; it is read and left.
	Status map[string]any `json:"status,omitempty"`
}

type nrcSpec struct {
	Conditions      []nrcCondition       `json:"conditions"`
	EnforcementMode string               `json:"enforcementMode,omitempty"`
	Taint           corev1.Taint         `json:"taint"`
	NodeSelector    metav1.LabelSelector `json:"nodeSelector"`
	ConditionPolicy string               `json:"conditionPolicy,omitempty"`
	DryRun          bool                 `json:"dryRun,omitempty"`
}

type nrcCondition struct {
	Type           string                 `json:"type"`
	RequiredStatus corev1.ConditionStatus `json:"requiredStatus"`
	DefaultStatus  corev1.ConditionStatus `json:"defaultStatus,omitempty"`
}

// nrcList is a `kind: List` (kubectl get -o yaml) or a NodeReadinessRuleList.
type nrcList struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta   `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

// NRC converts NodeReadinessRule objects: YAML documents, each a rule or a list of them.
// bootstrap-only becomes a startup rule, continuous a continuous rule; the conditions, the
// taint, the node selector and dryRun carry over. A field the gate has no equal for is an
// error: anyOf, a continuous rule that does not use NoSchedule, a condition whose absence
// NRC counts as satisfied.
func NRC(data []byte) (*Output, error) {
	objs, err := nrcObjects(data)
	if err != nil {
		return nil, err
	}
	out := &Output{Header: []string{"Converted from node-readiness-controller NodeReadinessRules by `gate convert --from nrc`."}}
	for _, o := range objs {
		r, err := nrcToRule(o)
		if err != nil {
			return nil, fmt.Errorf("NodeReadinessRule %q: %w", o.Metadata.Name, err)
		}
		out.Rules = append(out.Rules, r)
	}
	return out, nil
}

// nrcObjects splits the YAML stream and decodes every rule in it, strictly.
func nrcObjects(data []byte) ([]nrcRule, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []nrcRule
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", i, err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", i, err)
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue // an empty document
		}
		rules, err := nrcDecode(raw)
		if err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", i, err)
		}
		out = append(out, rules...)
	}
}

// nrcDecode decodes one object: a rule, or a list whose items are decoded in turn.
func nrcDecode(raw []byte) ([]nrcRule, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	switch {
	case tm.Kind == "List" || (tm.Kind == "NodeReadinessRuleList" && tm.APIVersion == nrcAPIVersion):
		var l nrcList
		if err := config.DecodeStrict(raw, &l); err != nil {
			return nil, err
		}
		var out []nrcRule
		for i, item := range l.Items {
			rules, err := nrcDecode(item)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, rules...)
		}
		return out, nil
	case tm.Kind == "NodeReadinessRule" && tm.APIVersion == nrcAPIVersion:
		var r nrcRule
		if err := config.DecodeStrict(raw, &r); err != nil {
			return nil, err
		}
		return []nrcRule{r}, nil
	}
	return nil, fmt.Errorf("%s %s: want a %s NodeReadinessRule or a List of them", tm.APIVersion, tm.Kind, nrcAPIVersion)
}

// nrcToRule converts one NodeReadinessRule.
func nrcToRule(o nrcRule) (Rule, error) {
	s := o.Spec
	r := rule.Rule{Name: o.Metadata.Name, Taint: s.Taint, DryRun: s.DryRun}
	if s.Taint.TimeAdded != nil {
		return Rule{}, fmt.Errorf("spec.taint.timeAdded: set: a rule's taint carries no time; the gate sets it on NoExecute taints it adds")
	}
	switch s.ConditionPolicy {
	case "", "allOf":
	default:
		return Rule{}, fmt.Errorf("spec.conditionPolicy: %q: a gate rule requires every condition (allOf); it has no equal for any other policy", s.ConditionPolicy)
	}
	var comments []string
	switch s.EnforcementMode {
	case "bootstrap-only":
		r.Mode = rule.Startup
		comments = []string{
			"From NodeReadinessRule " + o.Metadata.Name + " (bootstrap-only): released once per node.",
			"The gate adds the taint inside Node CREATE; kubelet's --register-with-taints is not needed.",
			"Like NRC, it holds a node until the conditions are met, however long. maxHold bounds that,",
			"with timeoutPolicy release, keep, or replace: with Karpenter, the gate deletes the NodeClaim",
			"of a node that never warms (the chart grants that for a replace rule; kustomize:",
			"deploy/overlays/replace).",
		}
	case "continuous":
		if s.Taint.Effect != corev1.TaintEffectNoSchedule {
			return Rule{}, fmt.Errorf("spec.taint.effect: %q with enforcementMode continuous: a continuous gate rule uses NoSchedule only, it never evicts (a condition rule evicts, with a budget, but matches conditions that are present, not requirements)", s.Taint.Effect)
		}
		r.Mode = rule.Continuous
		comments = []string{
			"From NodeReadinessRule " + o.Metadata.Name + " (continuous).",
			"NRC re-taints a node as soon as a condition fails; the gate waits settleTime first",
			fmt.Sprintf("(default %s) so that a flapping condition does not storm Node writes. Set settleTime", rule.DefaultSettleTime),
			"to change it.",
		}
	default:
		return Rule{}, fmt.Errorf("spec.enforcementMode: %q: want bootstrap-only or continuous", s.EnforcementMode)
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.NodeSelector)
	if err != nil {
		return Rule{}, fmt.Errorf("spec.nodeSelector: %w", err)
	}
	r.NodeSelector = sel.String()
	for i, c := range s.Conditions {
		cond, err := nrcRequirement(c)
		if err != nil {
			return Rule{}, fmt.Errorf("spec.conditions[%d].%w", i, err)
		}
		r.Conditions = append(r.Conditions, cond)
	}
	return Rule{Comments: comments, Rule: r}, nil
}

// nrcRequirement converts one requirement to Type=Status, with NRC's defaultStatus as the
// status an absent condition counts as. NRC reads an absent condition as its defaultStatus,
// Unknown when unset. A gate requirement without a default never holds for an absent
// condition, which is the same unless the requirement is Unknown: only then is NRC's
// implicit Unknown written out.
func nrcRequirement(c nrcCondition) (rule.ConditionRequirement, error) {
	if strings.Contains(c.Type, "=") {
		return rule.ConditionRequirement{}, fmt.Errorf("type: %q: a gate condition is Type=Status, so its type cannot hold '='", c.Type)
	}
	cond := c.Type + "=" + string(c.RequiredStatus)
	if err := rule.CheckCondition(cond); err != nil {
		return rule.ConditionRequirement{}, fmt.Errorf("requiredStatus: %w", err)
	}
	req := rule.ParseConditionRequirement(cond)
	switch c.DefaultStatus {
	case "":
		if c.RequiredStatus == corev1.ConditionUnknown {
			req.DefaultStatus = corev1.ConditionUnknown
		}
	case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		req.DefaultStatus = c.DefaultStatus
	default:
		return rule.ConditionRequirement{}, fmt.Errorf("defaultStatus: %q: must be True, False or Unknown", c.DefaultStatus)
	}
	return req, nil
}

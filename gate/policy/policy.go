package policy

import (
	"bytes"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate"
)

// Name names both the MutatingAdmissionPolicy and its binding.
const Name = "startupgate-node-taint"

// For renders the webhook's mutation as a MutatingAdmissionPolicy and binding, evaluated
// inside the apiserver: no TLS, no network hop, and no dependency on the gate's Pods being
// up when a node registers. It matches Node CREATE on the same node selector, skips nodes
// that are released or already carry the taint (key and effect, like the webhook), and adds
// the taint. A test against a real apiserver holds it equal to the webhook.
func For(c *gate.Config) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	selector, err := labelSelector(c.NodeSelector)
	if err != nil {
		return nil, nil, fmt.Errorf("converting nodeSelector %q: %w", c.NodeSelector, err)
	}
	taint := fmt.Sprintf("Object.spec.taints{key: %q, effect: %q", c.Taint.Key, string(c.Taint.Effect))
	if c.Taint.Value != "" {
		taint += fmt.Sprintf(", value: %q", c.Taint.Value)
	}
	taint += "}"
	// The apiserver's TaintNodesByCondition plugin has normally added not-ready already, so
	// the list usually exists; both shapes are handled.
	expr := fmt.Sprintf(`has(object.spec.taints) ?
  [JSONPatch{op: "add", path: "/spec/taints/-", value: %s}] :
  [JSONPatch{op: "add", path: "/spec/taints", value: [%s]}]`, taint, taint)

	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: selector,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{
					Name:       "not-released",
					Expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations)`, c.CompletedAnnotation),
				},
				{
					Name: "not-tainted",
					Expression: fmt.Sprintf(`!has(object.spec.taints) || !object.spec.taints.exists(t, t.key == %q && t.effect == %q)`,
						c.Taint.Key, string(c.Taint.Effect)),
				},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr},
			}},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: Name},
	}
	return policy, binding, nil
}

// YAML renders For as one multi-document YAML stream, for --print-policy and for
// deploy/overlays/policy.
func YAML(c *gate.Config) ([]byte, error) {
	policy, binding, err := For(c)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, obj := range []any{policy, binding} {
		out, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("rendering policy: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(out)
	}
	return buf.Bytes(), nil
}

// labelSelector converts selector syntax (which allows != and !key) into the structured
// form admission objectSelectors take.
func labelSelector(s string) (*metav1.LabelSelector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	out := &metav1.LabelSelector{}
	for _, r := range reqs {
		var op metav1.LabelSelectorOperator
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			op = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			op = metav1.LabelSelectorOpDoesNotExist
		default:
			return nil, fmt.Errorf("operator %q has no objectSelector form", r.Operator())
		}
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key(), Operator: op, Values: r.Values().List(),
		})
	}
	return out, nil
}

// ObjectSelector is the node selector in the structured form webhook and policy
// configurations take; deploy/base/webhook.yaml carries the default one.
func ObjectSelector(c *gate.Config) (*metav1.LabelSelector, error) {
	return labelSelector(c.NodeSelector)
}

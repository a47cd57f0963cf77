package policy

import (
	"bytes"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// Name names both the MutatingAdmissionPolicy and its binding.
const Name = "startupgate-node-taint"

// Objects are one rule's policy and binding.
type Objects struct {
	Policy  *admissionregistrationv1.MutatingAdmissionPolicy
	Binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// For renders one policy and binding per rule that holds nodes from creation, in rule order
// (condition rules never taint at creation). The default rule's objects keep the name Name;
// another rule's are Name-<rule>. A dry-run or suspended rule writes nothing, not even at
// creation, yet still renders its objects, whose policy never matches: they are applied as
// rendered, and an apply without pruning keeps an object the rendering leaves out, so the
// policy of the rule before it was suspended would go on tainting new nodes that the
// suspended rule then never releases.
func For(c *config.Config) ([]Objects, error) {
	var out []Objects
	for _, r := range c.EffectiveRules() {
		if r.Mode == rule.Condition {
			continue
		}
		name := Name
		if r.Name != config.DefaultRuleName {
			name += "-" + r.Name
		}
		p, b, err := ForRule(r, name)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		if r.DryRun || r.Suspend {
			p.Spec.MatchConditions = append([]admissionregistrationv1.MatchCondition{{Name: "writes-nothing", Expression: "false"}}, p.Spec.MatchConditions...)
		}
		out = append(out, Objects{Policy: p, Binding: b})
	}
	return out, nil
}

// ForRule renders the webhook's mutation for one rule as a MutatingAdmissionPolicy and binding, evaluated
// inside the apiserver: no TLS, no network hop, and no dependency on the gate's Pods being
// up when a node registers. It matches Node CREATE on the same node selector, skips nodes
// that are released or already carry the taint (key and effect, like the webhook), and adds
// the taint. A test against a real apiserver holds it equal to the webhook.
func ForRule(c *rule.Rule, name string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
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
	// the list usually exists; both shapes are handled, for the annotations too. The mark
	// says the gate placed the taint (rule.Rule.PlacedAnnotation).
	mark := strings.NewReplacer("~", "~0", "/", "~1").Replace(c.PlacedAnnotation)
	expr := fmt.Sprintf(`(has(object.spec.taints) ?
  [JSONPatch{op: "add", path: "/spec/taints/-", value: %s}] :
  [JSONPatch{op: "add", path: "/spec/taints", value: [%s]}]) +
(has(object.metadata.annotations) ?
  [JSONPatch{op: "add", path: "/metadata/annotations/%s", value: %q}] :
  [JSONPatch{op: "add", path: "/metadata/annotations", value: {%q: %q}}])`,
		taint, taint, mark, c.PlacedValue(), c.PlacedAnnotation, c.PlacedValue())

	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
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
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	return policy, binding, nil
}

// YAML renders For as one multi-document YAML stream, for --print-policy and for
// deploy/overlays/policy.
func YAML(c *config.Config) ([]byte, error) {
	objs, err := For(c)
	if err != nil {
		return nil, err
	}
	var docs []any
	for _, o := range objs {
		docs = append(docs, o.Policy, o.Binding)
	}
	var buf bytes.Buffer
	for i, obj := range docs {
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

// ObjectSelector is the webhook's objectSelector in the structured form admission
// configurations take: the requirements that every rule that writes shares, so that the
// apiserver calls the webhook for every node some rule applies to (a label selector has no
// "or"). With the default rule alone it is that rule's selector, which
// deploy/base/webhook.yaml carries.
func ObjectSelector(c *config.Config) (*metav1.LabelSelector, error) {
	var common labels.Requirements
	first := true
	for _, r := range c.Admitting() {
		sel, err := labels.Parse(r.NodeSelector)
		if err != nil {
			return nil, err
		}
		reqs, _ := sel.Requirements()
		if first {
			common, first = reqs, false
			continue
		}
		common = shared(common, reqs)
	}
	return labelSelector(labels.NewSelector().Add(common...).String())
}

// shared are the requirements of a that b has too.
func shared(a, b labels.Requirements) labels.Requirements {
	var out labels.Requirements
	for _, ra := range a {
		for _, rb := range b {
			if ra.Equal(rb) {
				out = append(out, ra)
				break
			}
		}
	}
	return out
}

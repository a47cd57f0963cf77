package gate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The contract's defaults. They are defaults, not literals: every use goes through Config.
const (
	DefaultTaintKey            = "startup.k8s.io/initializing"
	DefaultTaintValue          = "wait"
	DefaultInitLabel           = "startup.k8s.io/component=init"
	DefaultReadyAnnotation     = "startup.k8s.io/ready"
	DefaultCompletedAnnotation = "startup.k8s.io/completedAt"
	// DefaultNodeSelector gates every node except AKS system-pool and control-plane nodes:
	// the gate's own Pods run there, so gating them could deadlock the cluster.
	DefaultNodeSelector = "kubernetes.azure.com/mode!=system,!node-role.kubernetes.io/control-plane"

	// AutoscalerTaintPrefix is the key prefix the cluster autoscaler treats as a startup taint:
	// a node carrying it is counted as upcoming capacity, not as unusable.
	AutoscalerTaintPrefix = "startup-taint.cluster-autoscaler.kubernetes.io/"
)

// TimeoutPolicy says what happens when MaxHold passes before the node is ready.
type TimeoutPolicy string

const (
	// TimeoutRelease removes the taint anyway and records a Warning event.
	TimeoutRelease TimeoutPolicy = "release"
	// TimeoutKeep keeps the taint and alerts (event + metric); an operator decides.
	TimeoutKeep TimeoutPolicy = "keep"
)

// Component is one required initialization workload: the Pods selected by Selector in
// Namespace (empty means all namespaces). A node is ready when every component that has a
// Pod on it is ready, and at least one component has.
type Component struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Selector  string `json:"selector"`
}

// Config is the whole contract of the gate. The zero value is not usable: start from
// DefaultConfig and call Validate before use; Validate also compiles the selectors.
type Config struct {
	// Taint is the startup taint the gate adds at creation and removes at release.
	// Only key and effect identify it; the value is informational.
	Taint corev1.Taint `json:"taint"`
	// ReadyAnnotation on an init Pod, with value "true", marks it ready early.
	ReadyAnnotation string `json:"readyAnnotation"`
	// CompletedAnnotation is written on the Node, in the same write that removes the taint.
	CompletedAnnotation string `json:"completedAnnotation"`
	// NodeSelector (label selector syntax) chooses which nodes are gated.
	NodeSelector string `json:"nodeSelector"`
	// Components are the required init workloads.
	Components []Component `json:"components"`
	// RequiredCondition, "Type=Status", must also hold on the Node before release (optional).
	RequiredCondition string `json:"requiredCondition,omitempty"`
	// AnnotationOnly counts only the ReadyAnnotation, not Pod readiness.
	AnnotationOnly bool `json:"annotationOnly,omitempty"`
	// MinHold is the shortest time a node stays gated, counted from its creation.
	MinHold metav1.Duration `json:"minHold,omitempty"`
	// MaxHold bounds the wait (0: unbounded); then TimeoutPolicy applies.
	MaxHold       metav1.Duration `json:"maxHold,omitempty"`
	TimeoutPolicy TimeoutPolicy   `json:"timeoutPolicy"`
	// Webhook serves the mutating webhook; Backfill taints idle nodes that came up untainted.
	Webhook  bool `json:"webhook"`
	Backfill bool `json:"backfill,omitempty"`
	// PodGuard serves the validating webhook that denies Pods bound directly to gated nodes.
	PodGuard bool `json:"podGuard,omitempty"`

	compiled *compiled
}

type compiled struct {
	nodes      labels.Selector
	components []compiledComponent
	condType   corev1.NodeConditionType
	condStatus corev1.ConditionStatus
	// cacheKey is a label key every component requires: the Pod cache selects on it.
	cacheKey       string
	cacheNamespace string
}

type compiledComponent struct {
	Component
	selector labels.Selector
}

// DefaultConfig returns the contract's defaults.
func DefaultConfig() Config {
	return Config{
		Taint:               corev1.Taint{Key: DefaultTaintKey, Value: DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule},
		ReadyAnnotation:     DefaultReadyAnnotation,
		CompletedAnnotation: DefaultCompletedAnnotation,
		NodeSelector:        DefaultNodeSelector,
		Components:          []Component{{Name: "init", Selector: DefaultInitLabel}},
		TimeoutPolicy:       TimeoutRelease,
		Webhook:             true,
	}
}

// LoadConfig strictly decodes YAML over the defaults: unknown fields are an error.
func LoadConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Config{}, fmt.Errorf("decoding config: %w", err)
	}
	// Strict as the apiserver is: unknown, duplicate and wrongly-cased fields are errors
	// (encoding/json alone would match "maxhold" to maxHold).
	strict, err := sigsjson.UnmarshalStrict(raw, &cfg)
	if err != nil {
		return Config{}, fmt.Errorf("decoding config: %w", err)
	}
	if len(strict) > 0 {
		return Config{}, fmt.Errorf("decoding config: %w", errors.Join(strict...))
	}
	return cfg, nil
}

// Validate checks every field and compiles the selectors. Each error names its field, and
// every error is reported at once, in field order, so one failed start shows them all.
func (c *Config) Validate() error {
	var errs fieldErrors
	out := &compiled{}
	c.validateTaint(&errs)
	c.validateAnnotations(&errs)
	c.compileNodeSelector(out, &errs)
	c.compileComponents(out, &errs)
	// The common-key check needs every selector compiled; after any earlier error it would
	// only add noise to a config that is already rejected.
	if len(errs) == 0 {
		out.chooseCache(&errs)
	}
	c.compileCondition(out, &errs)
	c.validateHolds(&errs)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.compiled = out
	return nil
}

// fieldErrors collects Validate's errors, each prefixed with the field it names, so the
// messages read the same whichever concern found them.
type fieldErrors []error

func (e *fieldErrors) add(field, format string, args ...any) {
	*e = append(*e, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// validateTaint checks the taint as the apiserver would: a qualified key, a label-value
// value, a known effect. A taint the apiserver rejects would fail every Node CREATE.
func (c *Config) validateTaint(errs *fieldErrors) {
	for _, msg := range validation.IsQualifiedName(c.Taint.Key) {
		errs.add("taint.key", "%q: %s", c.Taint.Key, msg)
	}
	if c.Taint.Value != "" {
		for _, msg := range validation.IsValidLabelValue(c.Taint.Value) {
			errs.add("taint.value", "%q: %s", c.Taint.Value, msg)
		}
	}
	switch c.Taint.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs.add("taint.effect", "%q: must be NoSchedule, PreferNoSchedule or NoExecute", c.Taint.Effect)
	}
}

// validateAnnotations checks that both annotation keys are qualified names: the gate reads
// one from init Pods and writes the other on Nodes.
func (c *Config) validateAnnotations(errs *fieldErrors) {
	for _, a := range []struct{ field, key string }{
		{"readyAnnotation", c.ReadyAnnotation},
		{"completedAnnotation", c.CompletedAnnotation},
	} {
		for _, msg := range validation.IsQualifiedName(a.key) {
			errs.add(a.field, "%q: %s", a.key, msg)
		}
	}
}

func (c *Config) compileNodeSelector(out *compiled, errs *fieldErrors) {
	var err error
	if out.nodes, err = labels.Parse(c.NodeSelector); err != nil {
		errs.add("nodeSelector", "%q: %v", c.NodeSelector, err)
	}
}

// compileComponents parses each component's selector and checks its namespace. A component
// with an empty selector would match every Pod, so it is refused.
func (c *Config) compileComponents(out *compiled, errs *fieldErrors) {
	if len(c.Components) == 0 {
		errs.add("components", "at least one required component is needed")
	}
	for i, comp := range c.Components {
		sel, err := labels.Parse(comp.Selector)
		if err != nil || sel.Empty() {
			errs.add(fmt.Sprintf("components[%d].selector", i), "%q: must be a non-empty label selector (%v)", comp.Selector, err)
			continue
		}
		if comp.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(comp.Namespace) {
				errs.add(fmt.Sprintf("components[%d].namespace", i), "%q: %s", comp.Namespace, msg)
			}
		}
		if comp.Name == "" {
			comp.Name = comp.Selector
		}
		out.components = append(out.components, compiledComponent{Component: comp, selector: sel})
	}
}

// chooseCache picks what the Pod cache selects: a label key every component requires (the
// smallest, so the choice is stable), and the components' namespace if they share one.
// Without such a key the gate would have to cache every Pod in the cluster.
func (out *compiled) chooseCache(errs *fieldErrors) {
	keys := map[string]int{}
	namespaces := map[string]bool{}
	for _, comp := range out.components {
		namespaces[comp.Namespace] = true
		for k := range requiredKeys(comp.selector) {
			keys[k]++
		}
	}
	for k, n := range keys {
		if n == len(out.components) && (out.cacheKey == "" || k < out.cacheKey) {
			out.cacheKey = k
		}
	}
	if out.cacheKey == "" {
		errs.add("components", "every component selector must require one common label key (it selects the Pod cache, so the gate never caches all Pods)")
	}
	if len(namespaces) == 1 {
		for ns := range namespaces {
			out.cacheNamespace = ns
		}
	}
}

// requiredKeys are the label keys every Pod the selector matches must carry. Negative
// requirements (!=, notin, !key) match Pods without the key, so they do not count.
func requiredKeys(sel labels.Selector) map[string]bool {
	reqs, _ := sel.Requirements()
	keys := map[string]bool{}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.Exists:
			keys[r.Key()] = true
		}
	}
	return keys
}

func (c *Config) compileCondition(out *compiled, errs *fieldErrors) {
	if c.RequiredCondition == "" {
		return
	}
	t, s, ok := strings.Cut(c.RequiredCondition, "=")
	switch {
	case !ok || t == "":
		errs.add("requiredCondition", "%q: must be Type=Status", c.RequiredCondition)
	case s != string(corev1.ConditionTrue) && s != string(corev1.ConditionFalse) && s != string(corev1.ConditionUnknown):
		errs.add("requiredCondition", "%q: status must be True, False or Unknown", c.RequiredCondition)
	default:
		out.condType, out.condStatus = corev1.NodeConditionType(t), corev1.ConditionStatus(s)
	}
}

// validateHolds checks the hold bounds and what happens when the maximum passes. A maximum
// shorter than the minimum would time every node out before it could be released.
func (c *Config) validateHolds(errs *fieldErrors) {
	if c.MinHold.Duration < 0 {
		errs.add("minHold", "%s: must not be negative", c.MinHold.Duration)
	}
	if c.MaxHold.Duration < 0 {
		errs.add("maxHold", "%s: must not be negative", c.MaxHold.Duration)
	}
	if c.MaxHold.Duration > 0 && c.MaxHold.Duration < c.MinHold.Duration {
		errs.add("maxHold", "%s: must not be shorter than minHold %s", c.MaxHold.Duration, c.MinHold.Duration)
	}
	switch c.TimeoutPolicy {
	case TimeoutRelease, TimeoutKeep:
	default:
		errs.add("timeoutPolicy", "%q: must be %q or %q", c.TimeoutPolicy, TimeoutRelease, TimeoutKeep)
	}
}

// rules returns the compiled form. Using an unvalidated Config is a programming error.
func (c *Config) rules() *compiled {
	if c.compiled == nil {
		panic("gate: Config used before Validate")
	}
	return c.compiled
}

// Gated reports whether the node selector chooses this node.
func (c *Config) Gated(node *corev1.Node) bool {
	return c.rules().nodes.Matches(labels.Set(node.Labels))
}

// Released reports whether the gate has already released this node; such a node is never
// gated again.
func (c *Config) Released(node *corev1.Node) bool {
	_, ok := node.Annotations[c.CompletedAnnotation]
	return ok
}

// HasTaint reports whether the node carries the startup taint (matched on key and effect,
// so a value set by kubelet --register-with-taints or Karpenter still counts).
func (c *Config) HasTaint(node *corev1.Node) bool {
	return c.taintIndex(node.Spec.Taints) >= 0
}

func (c *Config) taintIndex(taints []corev1.Taint) int {
	for i := range taints {
		if taints[i].Key == c.Taint.Key && taints[i].Effect == c.Taint.Effect {
			return i
		}
	}
	return -1
}

// Tolerates reports whether the tolerations let a Pod schedule onto a node with the taint.
func (c *Config) Tolerates(tolerations []corev1.Toleration) bool {
	return tolerates(tolerations, &c.Taint)
}

func tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), taint, true) {
			return true
		}
	}
	return false
}

// CacheSelector is the label selector of the only Pods the gate caches.
func (c *Config) CacheSelector() labels.Selector {
	r, _ := labels.NewRequirement(c.rules().cacheKey, selection.Exists, nil)
	return labels.NewSelector().Add(*r)
}

// CacheNamespace is the one namespace all components live in, or "" for all namespaces.
func (c *Config) CacheNamespace() string { return c.rules().cacheNamespace }

// ParseComponent reads "[NAMESPACE:]SELECTOR", the form of the --require flag.
func ParseComponent(s string) Component {
	ns, sel, ok := strings.Cut(s, ":")
	if !ok {
		return Component{Name: s, Selector: s}
	}
	return Component{Name: s, Namespace: ns, Selector: sel}
}

// ParseTaint reads "key[=value]:Effect", the form of the --taint flag and kubelet's
// --register-with-taints.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: want key[=value]:Effect", s)
	}
	k, v, _ := strings.Cut(kv, "=")
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}

// maxHoldDeadline is when the node's max hold ends, or zero if unbounded.
func (c *Config) maxHoldDeadline(created time.Time) time.Time {
	if c.MaxHold.Duration <= 0 {
		return time.Time{}
	}
	return created.Add(c.MaxHold.Duration)
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/rule"
)

// The file's format, versioned the way Kubernetes components version theirs
// (KubeletConfiguration, KubeSchedulerConfiguration): a file names it, and is decoded
// strictly as that version.
const (
	// Group is the API group of the gate's configuration file.
	Group = "config.startupgate.io"
	// APIVersion is the one version this gate reads.
	APIVersion = Group + "/v1alpha1"
	// Kind is the file's kind.
	Kind = "GateConfiguration"
)

// The contract's defaults. They are defaults, not literals: every use goes through Config.
const (
	DefaultTaintKey            = "startup.k8s.io/initializing"
	DefaultTaintValue          = "wait"
	DefaultInitLabel           = "startup.k8s.io/component=init"
	DefaultReadyAnnotation     = "startup.k8s.io/ready"
	DefaultCompletedAnnotation = "startup.k8s.io/completedAt"
	// DefaultTaintedAnnotation, suffixed with the rule's name, marks the nodes a condition
	// rule tainted: the rule lifts only a taint it placed.
	DefaultTaintedAnnotation = "startup.k8s.io/taintedAt"
	// DefaultNodeSelector gates every node that Exclude leaves.
	DefaultNodeSelector = ""

	// AutoscalerTaintPrefix is the key prefix the cluster autoscaler treats as a startup taint:
	// a node carrying it is counted as upcoming capacity, not as unusable.
	AutoscalerTaintPrefix = "startup-taint.cluster-autoscaler.kubernetes.io/"
)

// DefaultOrphanGracePeriod is OrphanGracePeriod's default: longer than a rollout of the
// gate's replicas may take (a Deployment's default progressDeadlineSeconds is 10m, and a
// lease takeover follows), so that a replica still on the old rules never lifts the new
// rules' taints as orphans, nor the reverse. A removed rule's taint stays that long on the
// nodes it held; `gate release` lifts it sooner.
const DefaultOrphanGracePeriod = 15 * time.Minute

// DefaultExclude is Exclude's default: the AKS system pool (kubernetes.azure.com/mode=system)
// and the control plane (node-role.kubernetes.io/control-plane), where the gate's own Pods
// run, so that gating them could never deadlock the cluster.
func DefaultExclude() []metav1.LabelSelectorRequirement {
	return []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.azure.com/mode", Operator: metav1.LabelSelectorOpIn, Values: []string{"system"}},
		{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpExists},
	}
}

// DefaultRuleName names the rule that the top-level fields describe.
const DefaultRuleName = "default"

// Config is the whole contract of the gate. The zero value is not usable: start from
// DefaultConfig and call Validate before use; Validate also compiles the selectors.
//
// The fields from Taint to TimeoutPolicy describe one startup rule, named "default": the
// gate as it has always been configured, by flags. Rules, when given, replace it with a
// list of rules, each its own taint with its own nodes and requirements.
type Config struct {
	// APIVersion is config.startupgate.io/v1alpha1. A file without it (and without kind) is
	// still read, as this version, with a deprecation warning.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is GateConfiguration.
	Kind string `json:"kind,omitempty"`
	// Taint is the startup taint the gate adds at creation and removes at release.
	// Only key and effect identify it; the value is informational.
	Taint corev1.Taint `json:"taint"`
	// ReadyAnnotation on an init Pod, with value "true", marks it ready early.
	ReadyAnnotation string `json:"readyAnnotation"`
	// CompletedAnnotation is written on the Node, in the same write that removes the taint.
	CompletedAnnotation string `json:"completedAnnotation"`
	// NodeSelector (label selector syntax) chooses which nodes are gated, of those Exclude
	// leaves.
	NodeSelector string `json:"nodeSelector"`
	// Exclude are the nodes the gate never touches, whatever a rule selects: a node that
	// matches any of these requirements (label selector requirements: key, operator In,
	// NotIn, Exists or DoesNotExist, values) is not tainted at creation, not released, not
	// backfilled. The gate's own Pods run there, so that a gate whose Pods are all gone can
	// come back. Every rule's selector, the webhook's objectSelector, the admission policy's
	// and the Deployment's node affinity come from it. Default: the AKS system pool and the
	// control plane.
	Exclude []metav1.LabelSelectorRequirement `json:"exclude"`
	// Components are the required init workloads.
	Components []rule.Component `json:"components"`
	// RequiredCondition, "Type=Status", must also hold on the Node before release (optional).
	RequiredCondition string `json:"requiredCondition,omitempty"`
	// AnnotationOnly counts only the ReadyAnnotation, not Pod readiness.
	AnnotationOnly bool `json:"annotationOnly,omitempty"`
	// MinHold is the shortest time a node stays gated, counted from its creation.
	MinHold metav1.Duration `json:"minHold,omitempty"`
	// MaxHold bounds the wait (0: unbounded); then TimeoutPolicy applies.
	MaxHold       metav1.Duration    `json:"maxHold,omitempty"`
	TimeoutPolicy rule.TimeoutPolicy `json:"timeoutPolicy"`
	// Webhook serves the mutating webhook; Backfill taints idle nodes that came up untainted.
	Webhook  bool `json:"webhook"`
	Backfill bool `json:"backfill,omitempty"`
	// PodGuard serves the validating webhook that denies Pods bound directly to gated nodes.
	PodGuard bool `json:"podGuard,omitempty"`
	// Rules replace the default rule: each one taint, its nodes and its requirements.
	Rules []rule.Rule `json:"rules,omitempty"`
	// PlacedAnnotation prefixes the mark the gate writes with every taint it places, one
	// per rule: <placedAnnotation>.<rule name>, valued <taint key>:<effect>. By it the gate
	// lifts only taints it placed, and knows the taints of a rule that is gone.
	PlacedAnnotation string `json:"placedAnnotation,omitempty"`
	// Instance names this gate among several in one cluster (default: none, the one gate).
	// It is part of the mark of every taint the gate places, and a gate lifts as an orphan,
	// or as the taint of a node that left its rule's selector, only a taint it marked:
	// gates with disjoint node selectors and the same rule names never lift each other's.
	Instance string `json:"instance,omitempty"`
	// OrphanGracePeriod is how long a taint the gate placed that no rule has any more (a
	// rule removed, given a new key or effect, now a dry run) stays on before the gate
	// lifts it, with an event; `gate status` shows it meanwhile. The grace lets a rollout
	// that changes the rules finish, and an edit made by mistake be undone.
	OrphanGracePeriod metav1.Duration `json:"orphanGracePeriod,omitempty"`

	compiled *compiled
}

type compiled struct {
	rules []*rule.Rule
	// podScopes are the selections of Pods the gate caches (rule.PodScopes): the
	// components' Pods, never every Pod in the cluster.
	podScopes []rule.PodScope
}

// DefaultConfig returns the contract's defaults.
func DefaultConfig() Config {
	return Config{
		APIVersion:          APIVersion,
		Kind:                Kind,
		Taint:               corev1.Taint{Key: DefaultTaintKey, Value: DefaultTaintValue, Effect: corev1.TaintEffectNoSchedule},
		ReadyAnnotation:     DefaultReadyAnnotation,
		CompletedAnnotation: DefaultCompletedAnnotation,
		NodeSelector:        DefaultNodeSelector,
		Exclude:             DefaultExclude(),
		Components:          []rule.Component{{Name: "init", Selector: DefaultInitLabel}},
		TimeoutPolicy:       rule.TimeoutRelease,
		Webhook:             true,
		PlacedAnnotation:    rule.DefaultPlacedAnnotation,
		OrphanGracePeriod:   metav1.Duration{Duration: DefaultOrphanGracePeriod},
	}
}

// LoadConfig is Load without its warnings: for configs the project writes itself, such as
// a scenario's gate section, where an unversioned config is the norm.
func LoadConfig(data []byte) (Config, error) {
	cfg, _, err := Load(data)
	return cfg, err
}

// Load strictly decodes a configuration file over the defaults: unknown, duplicate and
// wrongly-cased fields are errors, and so is an apiVersion or kind other than this
// version's. A file that names neither is read as this version, with a warning that says
// how to version it; an empty file is the defaults.
func Load(data []byte) (Config, []string, error) {
	cfg := DefaultConfig()
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil, nil
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Config{}, nil, fmt.Errorf("decoding config: %w", err)
	}
	warnings, err := checkVersion(raw)
	if err != nil {
		return Config{}, nil, err
	}
	// A list decoded over a default list reuses its elements, and a field the file leaves
	// out keeps the default element's value (a component without a name would be "init"):
	// the lists with defaults are decoded into empty ones, and get their defaults back only
	// when the file does not name them.
	cfg.Components, cfg.Exclude = nil, nil
	if err := DecodeStrict(raw, &cfg); err != nil {
		return Config{}, nil, fmt.Errorf("decoding config: %w", err)
	}
	def := DefaultConfig()
	var named map[string]json.RawMessage
	_ = json.Unmarshal(raw, &named) // an object: DecodeStrict has just read it into one
	if _, ok := named["components"]; !ok {
		cfg.Components = def.Components
	}
	if _, ok := named["exclude"]; !ok {
		cfg.Exclude = def.Exclude
	}
	cfg.APIVersion, cfg.Kind = APIVersion, Kind
	return cfg, warnings, nil
}

// checkVersion reads the file's apiVersion and kind before the strict decoding, so that a
// file of another version fails with what it is and what this gate reads, not with a list
// of unknown fields.
func checkVersion(raw []byte) ([]string, error) {
	var tm struct {
		APIVersion *string `json:"apiVersion"`
		Kind       *string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &tm); err != nil {
		return nil, nil //nolint:nilerr // not an object of strings: the strict decoding says what is wrong
	}
	switch {
	case tm.APIVersion == nil && tm.Kind == nil:
		return []string{fmt.Sprintf("the config file names no apiVersion and kind, which is deprecated: it is read as %s; "+
			"add \"apiVersion: %s\" and \"kind: %s\" at its top", APIVersion, APIVersion, Kind)}, nil
	case tm.APIVersion == nil || *tm.APIVersion != APIVersion:
		return nil, fmt.Errorf("config apiVersion %s: this gate reads %s", quoteOrMissing(tm.APIVersion), APIVersion)
	case tm.Kind == nil || *tm.Kind != Kind:
		return nil, fmt.Errorf("config kind %s: a %s file is a %s", quoteOrMissing(tm.Kind), APIVersion, Kind)
	}
	return nil, nil
}

func quoteOrMissing(s *string) string {
	if s == nil {
		return "missing"
	}
	return fmt.Sprintf("%q", *s)
}

// MarshalJSON writes the config so that LoadConfig reads it back unchanged: the simulator
// hands a process-mode gate its config this way. corev1.Taint leaves out an empty value,
// and LoadConfig decodes over the defaults, so an autoscaler taint written without a value
// would come back with the default "wait"; here the value is always written.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without this method
	return json.Marshal(struct {
		plain
		Taint configTaint `json:"taint"` // shallower than plain's: it wins
	}{plain(c), configTaint{Key: c.Taint.Key, Value: c.Taint.Value, Effect: c.Taint.Effect, TimeAdded: c.Taint.TimeAdded}})
}

// configTaint is corev1.Taint with the value written even when empty.
type configTaint struct {
	Key       string             `json:"key"`
	Value     string             `json:"value"`
	Effect    corev1.TaintEffect `json:"effect"`
	TimeAdded *metav1.Time       `json:"timeAdded,omitempty"`
}

// DecodeStrict decodes JSON as strictly as the apiserver does: unknown, duplicate and
// wrongly-cased fields are errors (encoding/json alone would match "maxhold" to maxHold).
func DecodeStrict(raw []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(raw, into)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// Validate checks every field and compiles the selectors. Each error names its field (in a
// rule, the rule and the field), and every error is reported at once, in field order, so
// one failed start shows them all.
func (c *Config) Validate() error {
	var errs rule.Errors
	c.validateAnnotations(&errs)
	for _, msg := range validation.IsDNS1123Label(c.Instance) {
		if c.Instance != "" {
			errs.Add("instance", "%q: %s", c.Instance, msg)
		}
	}
	if c.OrphanGracePeriod.Duration < 0 {
		errs.Add("orphanGracePeriod", "%s: must not be negative", c.OrphanGracePeriod.Duration)
	}
	out := &compiled{rules: c.ruleList(&errs)}
	peers(out.rules, c.CompletedAnnotation)
	if excl := c.exclusion(&errs); excl != "" {
		for _, r := range out.rules {
			r.NodeSelector = strings.TrimPrefix(r.NodeSelector+","+excl, ",")
		}
	}
	at := func(i int) string {
		if len(c.Rules) == 0 {
			return "" // the default rule's fields are the top-level fields
		}
		return fmt.Sprintf("rules[%d] %q", i, out.rules[i].Name)
	}
	selected := true
	for i, r := range out.rules {
		r.CompileSelectors(at(i), &errs)
		selected = selected && r.Selected()
	}
	rule.Distinct(out.rules, &errs)
	// The common-key check needs every selector compiled; after an error in one it would
	// only add noise to a config that is already rejected.
	if len(errs) == 0 && selected {
		var err error
		if out.podScopes, err = rule.PodScopes(out.rules, DefaultInitLabel); err != nil {
			errs.Add("components", "%v", err)
		}
	}
	for i, r := range out.rules {
		if len(c.Rules) == 0 {
			c.defaultCondition(r, &errs)
		}
		r.CompileLimits(at(i), &errs)
		if r.OnReboot == rule.RebootGate && c.AnnotationOnly {
			errs.Add("annotationOnly", "rule %q has onReboot: gate, which needs Pod readiness: the ready annotation survives a reboot, so it cannot prove the warm-up ran again", r.Name)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.compiled = out
	return nil
}

// exclusion is the selector of the nodes Exclude leaves, as every rule's selector ends: each
// requirement negated (a node excluded by any requirement fails one of them).
func (c *Config) exclusion(errs *rule.Errors) string {
	var parts []string
	for i, e := range c.Exclude {
		r, err := Negate(e)
		if err != nil {
			errs.Add(fmt.Sprintf("exclude[%d]", i), "%v", err)
			continue
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}

// Negate is the label requirement a node outside the exclusion meets: In and NotIn swap, as
// do Exists and DoesNotExist.
func Negate(e metav1.LabelSelectorRequirement) (*labels.Requirement, error) {
	op, ok := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.NotIn, metav1.LabelSelectorOpNotIn: selection.In,
		metav1.LabelSelectorOpExists: selection.DoesNotExist, metav1.LabelSelectorOpDoesNotExist: selection.Exists,
	}[e.Operator]
	if !ok {
		return nil, fmt.Errorf("%q: operator %q: must be In, NotIn, Exists or DoesNotExist", e.Key, e.Operator)
	}
	if (op == selection.In || op == selection.NotIn) != (len(e.Values) > 0) {
		return nil, fmt.Errorf("%q: In and NotIn need values, Exists and DoesNotExist take none", e.Key)
	}
	return labels.NewRequirement(e.Key, op, e.Values)
}

// defaultCondition gives the default rule the --require-condition flag's condition, or
// reports it under its own field name.
func (c *Config) defaultCondition(r *rule.Rule, errs *rule.Errors) {
	if c.RequiredCondition == "" {
		return
	}
	if err := rule.CheckCondition(c.RequiredCondition); err != nil {
		errs.Add("requiredCondition", "%v", err)
		return
	}
	r.Conditions = []rule.ConditionRequirement{rule.ParseConditionRequirement(c.RequiredCondition)}
}

// validateAnnotations checks that the annotation keys are qualified names: the gate reads
// one from init Pods and writes the other on Nodes.
func (c *Config) validateAnnotations(errs *rule.Errors) {
	annotations := []struct{ field, key string }{{"readyAnnotation", c.ReadyAnnotation}, {"placedAnnotation", c.PlacedAnnotation}}
	if len(c.Rules) > 0 { // else the default rule checks its own, under the same name
		annotations = append(annotations, struct{ field, key string }{"completedAnnotation", c.CompletedAnnotation})
	}
	for _, a := range annotations {
		for _, msg := range validation.IsQualifiedName(a.key) {
			errs.Add(a.field, "%q: %s", a.key, msg)
		}
	}
}

// ruleList is the rules to compile: copies of Rules, each with its completion annotation
// defaulted, or else the default rule that the top-level fields describe. With Rules given,
// a top-level rule field that differs from its default is an error: it would silently not
// apply.
func (c *Config) ruleList(errs *rule.Errors) []*rule.Rule {
	if len(c.Rules) == 0 {
		return []*rule.Rule{c.defaultRule(errs)}
	}
	def := DefaultConfig()
	for _, f := range []struct {
		field string
		same  bool
	}{
		{"taint", c.Taint == def.Taint},
		{"nodeSelector", c.NodeSelector == def.NodeSelector},
		{"components", equality.Semantic.DeepEqual(c.Components, def.Components)},
		{"requiredCondition", c.RequiredCondition == def.RequiredCondition},
		{"minHold", c.MinHold == def.MinHold},
		{"maxHold", c.MaxHold == def.MaxHold},
		{"timeoutPolicy", c.TimeoutPolicy == def.TimeoutPolicy},
	} {
		if !f.same {
			errs.Add(f.field, "set it in a rule: with rules given, the default rule's top-level fields do not apply")
		}
	}
	out := make([]*rule.Rule, len(c.Rules))
	for i := range c.Rules {
		r := c.Rules[i]
		record := c.recordName(r.Taint)
		switch {
		case r.CompletedAnnotation != "":
		case r.Mode == rule.Condition:
			r.CompletedAnnotation = DefaultTaintedAnnotation + "." + record
			r.LegacyCompleted = DefaultTaintedAnnotation + "." + r.Name
		default:
			r.CompletedAnnotation = rule.CompletionOf(c.CompletedAnnotation, record)
			r.LegacyCompleted = rule.CompletionOf(c.CompletedAnnotation, r.Name)
		}
		r.PlacedAnnotation, r.PlacedBase, r.Instance = c.PlacedAnnotation+"."+record, c.PlacedAnnotation, c.Instance
		r.LegacyPlaced = c.PlacedAnnotation + "." + r.Name
		out[i] = &r
	}
	dropLegacyClashes(out)
	return out
}

// recordName names the record of taint t (rule.RecordName): the config's top-level taint,
// the contract's, keeps the default record and its bare completion annotation.
func (c *Config) recordName(t corev1.Taint) string {
	if t.Key == c.Taint.Key && t.Effect == c.Taint.Effect {
		return rule.DefaultRecord
	}
	return rule.RecordName(t)
}

// dropLegacyClashes keeps the legacy keys (named after the rule, as an earlier release
// kept them) only where they differ from the rule's own and are no other rule's record. A
// rule named "default" has none: whose taint is not the contract's kept its record under the
// bare completion annotation, which is the contract taint's record now (an upgrade reads it
// as that taint's, which the rule then adopts from).
func dropLegacyClashes(rules []*rule.Rule) {
	current := map[string]bool{}
	for _, r := range rules {
		current[r.CompletedAnnotation], current[r.PlacedAnnotation] = true, true
	}
	for _, r := range rules {
		if r.Name == DefaultRuleName {
			// Its earlier keys, the bare completion annotation and placed.default, are the
			// contract taint's record now, whichever rule holds that taint.
			r.LegacyCompleted, r.LegacyPlaced = "", ""
		}
		if r.LegacyCompleted == r.CompletedAnnotation || current[r.LegacyCompleted] {
			r.LegacyCompleted = ""
		}
		if r.LegacyPlaced == r.PlacedAnnotation || current[r.LegacyPlaced] {
			r.LegacyPlaced = ""
		}
	}
}

// peers tells each rule what it knows of the others: the taints that hold a node from its
// creation (every rule that is neither a condition rule nor a dry run), and the completion
// annotation the rules derive theirs from.
func peers(rules []*rule.Rule, completed string) {
	for _, r := range rules {
		r.ReleasedAnnotation, r.PeerTaints, r.GateTaints, r.GateRecords = completed, nil, nil, nil
		for _, p := range rules {
			r.GateTaints, r.GateRecords = append(r.GateTaints, p.Taint), append(r.GateRecords, p.CompletedAnnotation)
			if p != r && p.Mode != rule.Condition && !p.DryRun {
				r.PeerTaints = append(r.PeerTaints, p.Taint)
			}
		}
	}
}

// defaultRule is the startup rule that the top-level fields (today's flags) describe, with
// the contract's completedAt annotation. Its errors keep the top-level field names.
func (c *Config) defaultRule(errs *rule.Errors) *rule.Rule {
	r := &rule.Rule{Name: DefaultRuleName, Mode: rule.Startup, NodeSelector: c.NodeSelector, Taint: c.Taint,
		Components: c.Components, MinHold: c.MinHold, MaxHold: c.MaxHold, TimeoutPolicy: c.TimeoutPolicy,
		CompletedAnnotation: c.CompletedAnnotation, PlacedAnnotation: c.PlacedAnnotation + "." + rule.DefaultRecord, PlacedBase: c.PlacedAnnotation, Instance: c.Instance}
	if len(c.Components) == 0 {
		errs.Add("components", "at least one required component is needed")
	}
	if c.TimeoutPolicy == "" {
		errs.Add("timeoutPolicy", "%q: must be %q, %q or %q", c.TimeoutPolicy, rule.TimeoutRelease, rule.TimeoutKeep, rule.TimeoutReplace)
	}
	return r
}

// active returns the compiled form. Using an unvalidated Config is a programming error.
func (c *Config) active() *compiled {
	if c.compiled == nil {
		panic("config: Config used before Validate")
	}
	return c.compiled
}

// Validated reports whether Validate has compiled the config.
func (c *Config) Validated() bool { return c.compiled != nil }

// EffectiveRules are the rules the gate runs, compiled: Rules, or the default rule.
func (c *Config) EffectiveRules() []*rule.Rule { return c.active().rules }

// Readiness is how every rule reads an init Pod.
func (c *Config) Readiness() rule.Readiness {
	return rule.Readiness{Annotation: c.ReadyAnnotation, AnnotationOnly: c.AnnotationOnly}
}

// Enforced are the rules that write: every rule but the dry-run ones.
func (c *Config) Enforced() []*rule.Rule {
	var out []*rule.Rule
	for _, r := range c.active().rules {
		if !r.DryRun {
			out = append(out, r)
		}
	}
	return out
}

// Gating are the rules that hold a node from its creation: every rule that writes but the
// condition rules, which taint only while conditions match and never at creation.
func (c *Config) Gating() []*rule.Rule {
	var out []*rule.Rule
	for _, r := range c.Enforced() {
		if r.Mode != rule.Condition {
			out = append(out, r)
		}
	}
	return out
}

// Admitting are the rules that add their taint at a node's creation: every rule that
// holds nodes from creation but the suspended ones, which write nothing.
func (c *Config) Admitting() []*rule.Rule {
	var out []*rule.Rule
	for _, r := range c.Gating() {
		if !r.Suspend {
			out = append(out, r)
		}
	}
	return out
}

// Gated reports whether a rule that adds its taint at creation applies to this node: it
// must be held.
func (c *Config) Gated(node *corev1.Node) bool {
	for _, r := range c.Admitting() {
		if r.Matches(node) {
			return true
		}
	}
	return false
}

// Excluded reports whether the node matches a requirement of Exclude: the webhook is never
// called for it, so it registers whether or not the gate runs.
func (c *Config) Excluded(node *corev1.Node) bool {
	for _, e := range c.Exclude {
		if sel, err := ExcludeSelector(e); err == nil && sel.Matches(labels.Set(node.Labels)) {
			return true
		}
	}
	return false
}

// ExcludeSelector is the selector of the nodes one requirement of Exclude names.
func ExcludeSelector(e metav1.LabelSelectorRequirement) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{e}})
}

// InService reports whether the gate released the node under some taint's record, maybe one
// no rule has any more (rule.InService): backfill leaves it alone, and the rules that have
// not released it record it as released once their requirements hold.
func (c *Config) InService(node *corev1.Node) bool {
	return rule.InService(node, c.CompletedAnnotation)
}

// Released reports whether every rule that holds nodes from creation and applies to this node has released it
// once (its completion annotation is set). The gate never holds such a node again at
// creation; a continuous rule may still re-taint it.
func (c *Config) Released(node *corev1.Node) bool {
	applies := false
	for _, r := range c.Gating() {
		if r.Matches(node) {
			applies = true
			if !r.Completed(node) {
				return false
			}
		}
	}
	return applies
}

// HasTaint reports whether the node carries the taint of a rule that holds nodes from creation (matched on
// key and effect, so a value set by kubelet --register-with-taints or Karpenter still
// counts).
func (c *Config) HasTaint(node *corev1.Node) bool {
	for _, r := range c.Gating() {
		if r.HasTaint(node) {
			return true
		}
	}
	return false
}

// Tolerates reports whether the tolerations let a Pod schedule onto a node with the taint
// of every rule that holds nodes from creation.
func (c *Config) Tolerates(tolerations []corev1.Toleration) bool {
	for _, r := range c.Gating() {
		if !r.Tolerates(tolerations) {
			return false
		}
	}
	return true
}

// PodScopes are the only Pods the gate caches and reads: one selection (a namespace, or
// all, and a label selector) per informer (rule.PodScopes).
func (c *Config) PodScopes() []rule.PodScope { return c.active().podScopes }

// NodeLabelKeys are the node label keys the rules read: their node selectors', Karpenter's
// lifecycle labels (rule.AwaitingStartupTaints) and its NodePool label (the storm guard of
// timeoutPolicy replace is kept per NodePool). The gate's cache keeps no
// other label of a Node unless told to.
func (c *Config) NodeLabelKeys() []string {
	keys := []string{rule.KarpenterRegisteredLabel, rule.KarpenterInitializedLabel, rule.KarpenterDoNotSyncTaintsLabel, rule.KarpenterNodePoolLabel}
	for _, r := range c.EffectiveRules() {
		keys = append(keys, r.SelectorKeys()...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// PodLabelKeys are the label keys the rules' component selectors read on an init Pod.
func (c *Config) PodLabelKeys() []string {
	var keys []string
	for _, r := range c.EffectiveRules() {
		sels, _ := r.Selectors()
		for _, sel := range sels {
			keys = append(keys, rule.LabelKeys(sel)...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// ParseComponent reads "[NAMESPACE:]SELECTOR", the form of the --require flag.
func ParseComponent(s string) rule.Component {
	ns, sel, ok := strings.Cut(s, ":")
	if !ok {
		return rule.Component{Name: s, Selector: s}
	}
	return rule.Component{Name: s, Namespace: ns, Selector: sel}
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

// InRules writes a config that describes its default rule in the top-level fields as the
// same rule in Rules, named "default", the top-level fields back at their defaults: the form
// an edit of one rule among several needs. A config with Rules is left as it is. The rule
// keeps its record unless the top-level taint was not the default one (the contract's taint,
// whose record is the bare completion annotation, is the default's).
func (c *Config) InRules() {
	if len(c.Rules) > 0 {
		return
	}
	r := rule.Rule{Name: DefaultRuleName, Mode: rule.Startup, NodeSelector: c.NodeSelector, Taint: c.Taint,
		Components: c.Components, MinHold: c.MinHold, MaxHold: c.MaxHold, TimeoutPolicy: c.TimeoutPolicy}
	if c.RequiredCondition != "" {
		r.Conditions = []rule.ConditionRequirement{rule.ParseConditionRequirement(c.RequiredCondition)}
	}
	def := DefaultConfig()
	c.Taint, c.NodeSelector, c.Components, c.RequiredCondition = def.Taint, def.NodeSelector, def.Components, def.RequiredCondition
	c.MinHold, c.MaxHold, c.TimeoutPolicy = def.MinHold, def.MaxHold, def.TimeoutPolicy
	c.Rules = []rule.Rule{r}
	c.compiled = nil
}

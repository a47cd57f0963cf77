package rule

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Mode is how a rule acts after its first release.
type Mode string

const (
	// Startup rules are released once and never again.
	Startup Mode = "startup"
	// Continuous rules put their taint back while their requirements do not hold.
	Continuous Mode = "continuous"
	// Condition rules (tainter's) keep their taint on exactly while the node's conditions
	// match, with any effect; they add nothing at creation.
	Condition Mode = "condition"
)

// TimeoutPolicy says what happens when MaxHold passes before the node is ready.
type TimeoutPolicy string

const (
	// TimeoutRelease removes the taint anyway and records a Warning event.
	TimeoutRelease TimeoutPolicy = "release"
	// TimeoutKeep keeps the taint and alerts (event + metric); an operator decides.
	TimeoutKeep TimeoutPolicy = "keep"
	// TimeoutReplace (startup rules) deletes the node's NodeClaim, under a budget and a
	// storm guard (replace.go): Karpenter drains the node, terminates it and launches
	// another. A node no NodeClaim owns is kept, as with TimeoutKeep.
	TimeoutReplace TimeoutPolicy = "replace"
)

// RebootPolicy says what a startup rule does when a node it released reboots.
type RebootPolicy string

const (
	// RebootIgnore leaves a rebooted node alone: the rule released it once, for good.
	RebootIgnore RebootPolicy = "ignore"
	// RebootGate puts the rule's taint back when the node reports a new boot ID, and
	// releases it again on readiness that postdates the reboot.
	RebootGate RebootPolicy = "gate"
)

// DefaultSettleTime is how long a continuous rule's requirements must fail before its taint
// goes back on: a Pod restarting in place, or a condition that flaps, must not turn into a
// storm of Node writes.
const DefaultSettleTime = 5 * time.Second

// Component is one required initialization workload: the Pods selected by Selector in
// Namespace (empty means all namespaces). A node is ready when every component that has a
// Pod on it (or a DaemonSet targeting it) is ready, and at least one component has.
type Component struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Selector  string `json:"selector"`
}

// Rule is one taint and what must hold before it comes off. Compile it before use.
type Rule struct {
	// Name identifies the rule in events, metrics, logs and `gate status`.
	Name string `json:"name"`
	// Mode is startup (the default), continuous or condition.
	Mode Mode `json:"mode,omitempty"`
	// NodeSelector (label selector syntax) chooses the nodes the rule applies to.
	NodeSelector string `json:"nodeSelector,omitempty"`
	// Taint is added at creation and removed at release. Key and effect identify it.
	Taint corev1.Taint `json:"taint"`
	// Components are the init workloads that must be Ready on the node.
	Components []Component `json:"components,omitempty"`
	// Conditions are node conditions, "Type=Status", that must all hold; an absent one
	// holds only if its defaultStatus says so.
	Conditions []ConditionRequirement `json:"conditions,omitempty"`
	// MinHold is the shortest time a node stays held, counted from its creation.
	MinHold metav1.Duration `json:"minHold,omitempty"`
	// MaxHold bounds the first wait (0: unbounded); then TimeoutPolicy applies.
	MaxHold       metav1.Duration `json:"maxHold,omitempty"`
	TimeoutPolicy TimeoutPolicy   `json:"timeoutPolicy,omitempty"`
	// MaxReplacing (timeoutPolicy replace) is how many of the rule's nodes may be in
	// replacement at once, across NodePools: a timed-out node waits for a slot. Default 1.
	MaxReplacing int `json:"maxReplacing,omitempty"`
	// ReplaceStopAfter (timeoutPolicy replace) is the storm guard: after this many nodes of
	// one NodePool time out in a row, with none of its nodes warming in between, the rule
	// stops replacing there and keeps the nodes held (alert, `gate status`). Default 3.
	ReplaceStopAfter int `json:"replaceStopAfter,omitempty"`
	// ReplaceBackoff (timeoutPolicy replace) is the wait between replacements in one
	// NodePool after a timeout there, doubled for each further timeout in a row (at most
	// 16 times). Default 1m.
	ReplaceBackoff metav1.Duration `json:"replaceBackoff,omitempty"`
	// DryRun decides and reports, and writes nothing: no taint at creation, no release.
	DryRun bool `json:"dryRun,omitempty"`
	// OnReboot (startup rules) is what happens when a released node reports a new boot ID
	// (status.nodeInfo.bootID): ignore (the default), or gate, which puts the taint back and
	// releases the node again only once its components are Ready again after the reboot.
	OnReboot RebootPolicy `json:"onReboot,omitempty"`
	// Suspend freezes the rule, as an operator does during an incident: it adds no taint at
	// creation, releases nothing, re-taints nothing, until it is unset. The nodes it holds
	// stay held (suspending never releases; `gate release` does).
	Suspend bool `json:"suspend,omitempty"`
	// SettleTime (continuous rules) is how long requirements must fail before the taint
	// goes back on; default DefaultSettleTime.
	SettleTime metav1.Duration `json:"settleTime,omitempty"`
	// CompletedAnnotation is written on the Node when the rule first releases it; the rule's
	// record (record.go) is kept beside it. The gate defaults it after the rule's taint, not
	// its name: the contract's startup.k8s.io/completedAt for the config's top-level taint,
	// startup.k8s.io/completedAt.<RecordName> for every other. A condition rule writes it
	// with its taint and removes it with it (default startup.k8s.io/taintedAt.<RecordName>):
	// it marks a taint the rule placed, the only kind the rule ever lifts.
	CompletedAnnotation string `json:"completedAnnotation,omitempty"`
	// PlacedAnnotation is the mark the rule writes with every taint it places, valued
	// PlacedValue: <placedAnnotation>.<record> of the config (default
	// startup.k8s.io/placed.<RecordName>). The gate lifts only taints it placed, and by the
	// mark knows the taints no rule owns any more.
	PlacedAnnotation string `json:"-"`
	// PlacedBase is the config's placedAnnotation, which every mark's key extends with the
	// record's name (default DefaultPlacedAnnotation).
	PlacedBase string `json:"-"`
	// Instance is the config's instance: the name of this gate among several in one
	// cluster, part of every mark's value, so that a gate lifts only the taints it placed.
	Instance string `json:"-"`
	// PeerTaints are the taints of the gate's other rules that hold a node from its
	// creation, suspended ones included (the config sets them): a node that carries one is
	// held, not in service, and a rule that finds it without its own taint joins the hold.
	PeerTaints []corev1.Taint `json:"-"`
	// GateTaints are the taints of every rule of the config, whatever its mode (the config
	// sets them): a marked taint among none of them is an orphan's.
	GateTaints []corev1.Taint `json:"-"`
	// GateRecords are the completion annotations of every rule of the config (the config
	// sets them): a record under any other is no rule's.
	GateRecords []string `json:"-"`
	// ReleasedAnnotation is the completion annotation the gate's rules derive theirs from
	// (the config's; the rules' own are it, or it with ".<record>"): a node that carries one
	// was released by the gate under some taint, maybe one no rule has any more, and is in
	// service.
	ReleasedAnnotation string `json:"-"`
	// LegacyCompleted and LegacyPlaced are the keys an earlier release kept the rule's
	// record under, named after the rule rather than its taint (set by the config when they
	// differ): Migrate moves them.
	LegacyCompleted string `json:"-"`
	LegacyPlaced    string `json:"-"`
	// Match (condition rules) are the node conditions that must all be present and match
	// for the taint to be on.
	Match []Match `json:"match,omitempty"`
	// KeepAfterClear (condition rules) leaves the taint on when the conditions stop
	// matching: the operator removes it, as the out-of-service flow wants.
	KeepAfterClear bool `json:"keepAfterClear,omitempty"`
	// MaxTainted (NoExecute condition rules) is the eviction budget: how many of the nodes
	// the selector matches may carry the taint at once, a count or a percentage (rounded
	// up). Default 10%.
	MaxTainted *intstr.IntOrString `json:"maxTainted,omitempty"`

	c *compiled
}

type compiled struct {
	nodes      labels.Selector
	components []compiledComponent
	conditions []condition
	match      []compiledMatch
}

type compiledComponent struct {
	Component
	selector labels.Selector
}

type condition struct {
	Type   corev1.NodeConditionType
	Status corev1.ConditionStatus
	// Default is the status an absent condition counts as ("": never holds).
	Default corev1.ConditionStatus
}

// Errors collects validation errors, each prefixed with the field it names.
type Errors []error

// Add records an error about field.
func (e *Errors) Add(field, format string, args ...any) {
	*e = append(*e, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// Compile fills the rule's defaults, checks every field and compiles its selectors. Each
// error is added to errs prefixed with at, the rule's place in the config (e.g.
// `rules[1] "gpu"`), then the field. It is CompileSelectors then CompileLimits; a caller
// with checks across rules runs the two itself, with its checks between.
func (r *Rule) Compile(at string, errs *Errors) {
	r.CompileSelectors(at, errs)
	r.CompileLimits(at, errs)
}

// CompileSelectors fills the defaults and checks what identifies the rule and what it
// selects: name, mode, taint, completion annotation, node selector, components.
func (r *Rule) CompileSelectors(at string, errs *Errors) {
	field := fieldIn(at)
	if r.Mode == "" {
		r.Mode = Startup
	}
	if r.TimeoutPolicy == "" {
		r.TimeoutPolicy = TimeoutRelease
	}
	if r.SettleTime.Duration == 0 && r.Mode != Condition {
		r.SettleTime.Duration = DefaultSettleTime
	}
	if r.OnReboot == "" {
		r.OnReboot = RebootIgnore
	}
	if r.PlacedAnnotation == "" {
		r.PlacedAnnotation = DefaultPlacedAnnotation + "." + RecordName(r.Taint)
	}
	out := &compiled{}
	r.validateName(field, errs)
	r.validateTaint(field, errs)
	r.validateAnnotationKeys(field, errs)
	var err error
	if out.nodes, err = labels.Parse(r.NodeSelector); err != nil {
		errs.Add(field("nodeSelector"), "%q: %v", r.NodeSelector, err)
	}
	out.components = r.compileComponents(field, errs)
	r.c = out
}

// CompileLimits checks the conditions, the holds and the timeout policy. It needs
// CompileSelectors first.
func (r *Rule) CompileLimits(at string, errs *Errors) {
	field := fieldIn(at)
	c := r.compiled()
	c.match = r.compileMatch(field, errs)
	if r.Mode == Condition {
		return
	}
	c.conditions = r.compileConditions(field, errs)
	if len(r.Components) == 0 && len(r.Conditions) == 0 {
		errs.Add(field("components"), "a rule needs at least one component or condition")
	}
	r.validateHolds(field, errs)
	r.validateOnReboot(field, errs)
}

// validateOnReboot: only a startup rule gates a rebooted node (a continuous rule re-taints
// on its own), and only on a component, since a Pod Ready again after the reboot is the
// one evidence that the warm-up ran again; a node condition may never change across a
// quick reboot.
func (r *Rule) validateOnReboot(field func(string) string, errs *Errors) {
	switch r.OnReboot {
	case RebootIgnore:
	case RebootGate:
		if r.Mode != Startup {
			errs.Add(field("onReboot"), "%q: only a startup rule gates a rebooted node; a %s rule re-taints on its own", r.OnReboot, r.Mode)
		}
		if len(r.Components) == 0 {
			errs.Add(field("onReboot"), "%q: needs a component, whose Pod Ready again after the reboot proves the warm-up ran again", r.OnReboot)
		}
	default:
		errs.Add(field("onReboot"), "%q: must be %q or %q", r.OnReboot, RebootIgnore, RebootGate)
	}
}

// DefaultPlacedAnnotation prefixes the mark of a taint a rule placed (PlacedAnnotation).
const DefaultPlacedAnnotation = "startup.k8s.io/placed"

// validateAnnotationKeys checks every annotation key the rule writes on Nodes, as the
// apiserver will: the completion annotation, the reboot records derived from it, and the
// mark of a placed taint. A rule name makes part of them; a key the apiserver refuses would
// fail every release (or every re-gate) on every node, so a name too long for one is an
// error here, naming the key.
func (r *Rule) validateAnnotationKeys(field func(string) string, errs *Errors) {
	for _, msg := range validation.IsQualifiedName(r.CompletedAnnotation) {
		errs.Add(field("completedAnnotation"), "%q: %s", r.CompletedAnnotation, msg)
	}
	if len(validation.IsQualifiedName(r.CompletedAnnotation)) > 0 {
		return
	}
	if r.Mode != Condition {
		for _, key := range []string{r.BootAnnotation(), r.EvidenceAnnotation(), r.RegatedAnnotation(), r.ReplacedAnnotation(), r.TimeoutsAnnotation()} {
			for _, msg := range validation.IsQualifiedName(key) {
				errs.Add(field("completedAnnotation"), "%q: makes the annotation key %q, which the apiserver refuses: %s (shorten the completion annotation)", r.CompletedAnnotation, key, msg)
			}
		}
	}
	// The mark's key is the config's placedAnnotation and the record's name, which the taint
	// makes: a base the apiserver refuses is the config's own error, reported there once.
	if len(validation.IsQualifiedName(cmp.Or(r.PlacedBase, DefaultPlacedAnnotation))) > 0 {
		return
	}
	for _, msg := range validation.IsQualifiedName(r.PlacedAnnotation) {
		errs.Add(field("taint.key"), "%q: makes the placed-taint mark's key %q, which the apiserver refuses: %s (shorten placedAnnotation or the taint key)", r.Taint.Key, r.PlacedAnnotation, msg)
	}
}

// Selected reports whether every component selector compiled: only then can the caller
// judge what the selectors have in common.
func (r *Rule) Selected() bool { return r.c != nil && len(r.c.components) == len(r.Components) }

func fieldIn(at string) func(string) string {
	return func(f string) string { return strings.TrimPrefix(at+"."+f, ".") }
}

// CheckCondition reports whether s reads as a condition, "Type=Status".
func CheckCondition(s string) error {
	_, err := parseCondition(s)
	return err
}

func (r *Rule) validateName(field func(string) string, errs *Errors) {
	for _, msg := range validation.IsDNS1123Label(r.Name) {
		errs.Add(field("name"), "%q: %s", r.Name, msg)
	}
	switch r.Mode {
	case Startup, Condition:
	case Continuous:
		if r.Taint.Effect != corev1.TaintEffectNoSchedule {
			errs.Add(field("taint.effect"), "%q: a continuous rule uses NoSchedule only; it never evicts", r.Taint.Effect)
		}
	default:
		errs.Add(field("mode"), "%q: must be %q, %q or %q", r.Mode, Startup, Continuous, Condition)
	}
}

// validateTaint checks the taint as the apiserver would: a qualified key, a label-value
// value, a known effect. A taint the apiserver rejects would fail every Node CREATE.
func (r *Rule) validateTaint(field func(string) string, errs *Errors) {
	for _, msg := range validation.IsQualifiedName(r.Taint.Key) {
		errs.Add(field("taint.key"), "%q: %s", r.Taint.Key, msg)
	}
	if r.Taint.Value != "" {
		for _, msg := range validation.IsValidLabelValue(r.Taint.Value) {
			errs.Add(field("taint.value"), "%q: %s", r.Taint.Value, msg)
		}
	}
	if !validEffect(r.Taint.Effect) {
		errs.Add(field("taint.effect"), "%q: must be NoSchedule, PreferNoSchedule or NoExecute", r.Taint.Effect)
	}
	// A configured time would be stamped on every node as it is, stale from the start, and
	// could not even be written back exactly (metav1.Time keeps whole seconds).
	if r.Taint.TimeAdded != nil {
		errs.Add(field("taint.timeAdded"), "set: a rule's taint carries no time; the gate sets it on NoExecute taints it adds")
	}
}

func validEffect(e corev1.TaintEffect) bool {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return true
	}
	return false
}

// compileComponents parses each component's selector and checks its namespace. A component
// with an empty selector would match every Pod, so it is refused.
func (r *Rule) compileComponents(field func(string) string, errs *Errors) []compiledComponent {
	var out []compiledComponent
	for i, comp := range r.Components {
		sel, err := labels.Parse(comp.Selector)
		if err != nil || sel.Empty() {
			errs.Add(field(fmt.Sprintf("components[%d].selector", i)), "%q: must be a non-empty label selector (%v)", comp.Selector, err)
			continue
		}
		if comp.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(comp.Namespace) {
				errs.Add(field(fmt.Sprintf("components[%d].namespace", i)), "%q: %s", comp.Namespace, msg)
			}
		}
		if comp.Name == "" {
			comp.Name = comp.Selector
		}
		out = append(out, compiledComponent{Component: comp, selector: sel})
	}
	return out
}

func (r *Rule) compileConditions(field func(string) string, errs *Errors) []condition {
	var out []condition
	for i, c := range r.Conditions {
		f := field(fmt.Sprintf("conditions[%d]", i))
		if cond, err := c.compile(); err != nil {
			errs.Add(f, "%v", err)
		} else {
			out = append(out, cond)
		}
	}
	return out
}

// parseCondition reads "Type=Status".
func parseCondition(s string) (condition, error) {
	t, st, ok := strings.Cut(s, "=")
	switch {
	case !ok || t == "":
		return condition{}, fmt.Errorf("%q: must be Type=Status", s)
	case st != string(corev1.ConditionTrue) && st != string(corev1.ConditionFalse) && st != string(corev1.ConditionUnknown):
		return condition{}, fmt.Errorf("%q: status must be True, False or Unknown", s)
	}
	return condition{Type: corev1.NodeConditionType(t), Status: corev1.ConditionStatus(st)}, nil
}

// validateHolds checks the hold bounds and what happens when the maximum passes. A maximum
// shorter than the minimum would time every node out before it could be released.
func (r *Rule) validateHolds(field func(string) string, errs *Errors) {
	if r.MinHold.Duration < 0 {
		errs.Add(field("minHold"), "%s: must not be negative", r.MinHold.Duration)
	}
	if r.MaxHold.Duration < 0 {
		errs.Add(field("maxHold"), "%s: must not be negative", r.MaxHold.Duration)
	}
	if r.MaxHold.Duration > 0 && r.MaxHold.Duration < r.MinHold.Duration {
		errs.Add(field("maxHold"), "%s: must not be shorter than minHold %s", r.MaxHold.Duration, r.MinHold.Duration)
	}
	switch r.TimeoutPolicy {
	case TimeoutRelease, TimeoutKeep, TimeoutReplace:
	default:
		errs.Add(field("timeoutPolicy"), "%q: must be %q, %q or %q", r.TimeoutPolicy, TimeoutRelease, TimeoutKeep, TimeoutReplace)
	}
	r.validateReplace(field, errs)
	if r.SettleTime.Duration < 0 {
		errs.Add(field("settleTime"), "%s: must not be negative", r.SettleTime.Duration)
	}
}

// compiled returns the compiled form. Using an uncompiled Rule is a programming error.
func (r *Rule) compiled() *compiled {
	if r.c == nil {
		panic("rule: Rule used before Compile")
	}
	return r.c
}

// Matches reports whether the rule's node selector chooses this node.
func (r *Rule) Matches(node *corev1.Node) bool {
	return r.compiled().nodes.Matches(labels.Set(node.Labels))
}

// Completed reports whether the rule has released this node once (its completion
// annotation is set). A completed startup rule never holds the node again.
func (r *Rule) Completed(node *corev1.Node) bool {
	_, ok := node.Annotations[r.CompletedAnnotation]
	return ok
}

// HasTaint reports whether the node carries the rule's taint (matched on key and effect,
// so a value set by kubelet --register-with-taints or Karpenter still counts).
func (r *Rule) HasTaint(node *corev1.Node) bool { return r.taintIndex(node.Spec.Taints) >= 0 }

func (r *Rule) taintIndex(taints []corev1.Taint) int {
	for i := range taints {
		if taints[i].Key == r.Taint.Key && taints[i].Effect == r.Taint.Effect {
			return i
		}
	}
	return -1
}

// Tolerates reports whether the tolerations let a Pod schedule onto a node with the taint.
func (r *Rule) Tolerates(tolerations []corev1.Toleration) bool {
	return Tolerated(tolerations, &r.Taint)
}

// Tolerated reports whether the tolerations let a Pod schedule onto a node with taint, as
// the scheduler judges it.
func Tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), taint, true) {
			return true
		}
	}
	return false
}

// AddTaint adds the rule's taint unless the node has it (or, for a startup rule, the rule
// has already released the node), and marks it as the rule's (Placed). It reports whether it
// changed the node. It is the one mutation that the webhook, backfill and a continuous
// re-taint share.
func (r *Rule) AddTaint(n *corev1.Node) bool {
	if (r.Mode == Startup && r.Completed(n)) || r.HasTaint(n) {
		return false
	}
	r.place(n)
	return true
}

// place puts the rule's taint on the node with the mark that says the rule placed it.
func (r *Rule) place(n *corev1.Node) {
	if !r.HasTaint(n) {
		n.Spec.Taints = append(n.Spec.Taints, r.Taint)
	}
	setAnnotation(n, r.PlacedAnnotation, r.PlacedValue())
}

// PlacedValue is the value of the rule's mark: its taint's key and effect, which identify
// the taint, and the gate's instance, if it has one.
func (r *Rule) PlacedValue() string { return PlacedValue(r.Taint, r.Instance) }

// PlacedValue is a mark's value: "<key>:<effect>", then "@<instance>" when the gate has an
// instance name.
func PlacedValue(t corev1.Taint, instance string) string {
	v := t.Key + ":" + string(t.Effect)
	if instance != "" {
		v += "@" + instance
	}
	return v
}

// ParsePlaced reads a mark's value: the taint it names and the instance that placed it.
func ParsePlaced(v string) (corev1.Taint, string, bool) {
	v, instance, _ := strings.Cut(v, "@")
	i := strings.LastIndex(v, ":")
	if i <= 0 {
		return corev1.Taint{}, "", false
	}
	return corev1.Taint{Key: v[:i], Effect: corev1.TaintEffect(v[i+1:])}, instance, true
}

// Placed reports whether the rule's mark on the node says that the rule placed the taint
// it carries: a taint the rule placed is the rule's to take off when the node leaves its
// selector; any other (registered by hand on an excluded node) is not.
func (r *Rule) Placed(n *corev1.Node) bool {
	return n.Annotations[r.PlacedAnnotation] == r.PlacedValue()
}

// Release removes only the rule's taint and, the first time, records completion; it ends a
// re-gate, and a rule that gates reboots records the boot the node runs. A node already
// released keeps its original completion time: it is set exactly once. It is the release
// whatever the readiness (`gate release`); the controller's is Apply's.
func (r *Rule) Release(n *corev1.Node, now time.Time) {
	first := !r.Completed(n)
	r.RemoveTaint(n)
	r.mark(n, now)
	r.markUnwarmed(n, first)
	delete(n.Annotations, r.RegatedAnnotation())
	delete(n.Annotations, r.ReplacedAnnotation())
	if id := n.Status.NodeInfo.BootID; r.GatesReboots() && id != "" {
		setAnnotation(n, r.BootAnnotation(), id)
	}
}

// mark sets the rule's annotation on the node to now, unless it is set.
func (r *Rule) mark(n *corev1.Node, now time.Time) {
	if r.Completed(n) {
		return
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[r.CompletedAnnotation] = strconv.FormatInt(now.Unix(), 10)
}

// metaTime is now at the apiserver's resolution (seconds), so that a write compares equal
// to what is read back.
func metaTime(now time.Time) metav1.Time { return metav1.NewTime(now.Truncate(time.Second)) }

// RemoveTaint removes every entry that matches the rule's key and effect, and nothing else,
// with the marks that say a rule placed that taint.
func (r *Rule) RemoveTaint(n *corev1.Node) {
	Lift(n, r.Taint, r.placedPrefix(), r.PlacedValue())
}

// Lift removes every entry of taint t (matched on key and effect) from the node, and the
// marks under markPrefix valued mark: the one removal of a taint the gate placed, a rule's
// or an orphan's.
func Lift(n *corev1.Node, t corev1.Taint, markPrefix, mark string) {
	for k, v := range n.Annotations {
		if v == mark && strings.HasPrefix(k, markPrefix) {
			delete(n.Annotations, k)
		}
	}
	var out []corev1.Taint
	for _, x := range n.Spec.Taints {
		if x.Key != t.Key || x.Effect != t.Effect {
			out = append(out, x)
		}
	}
	if len(out) < len(n.Spec.Taints) {
		n.Spec.Taints = out
	}
}

// placedPrefix is the prefix every mark of the config shares, "<placedAnnotation>.": the
// config's (PlacedBase), or the default's.
func (r *Rule) placedPrefix() string { return cmp.Or(r.PlacedBase, DefaultPlacedAnnotation) + "." }

// SelectsPod reports whether the Pod is of one of the rule's components: in its namespace,
// its labels matching its selector.
func (r *Rule) SelectsPod(p *corev1.Pod) bool {
	set := labels.Set(p.Labels)
	for _, comp := range r.compiled().components {
		if (comp.Namespace == "" || comp.Namespace == p.Namespace) && comp.selector.Matches(set) {
			return true
		}
	}
	return false
}

// ComponentOf names the component of this rule whose Pods the DaemonSet creates, or "": a
// DaemonSet in the component's namespace whose Pod template labels match its selector.
func (r *Rule) ComponentOf(ds *appsv1.DaemonSet) string {
	set := labels.Set(ds.Spec.Template.Labels)
	for _, comp := range r.compiled().components {
		if (comp.Namespace == "" || comp.Namespace == ds.Namespace) && comp.selector.Matches(set) {
			return comp.Name
		}
	}
	return ""
}

// ExpectedOn names the rule's components that a DaemonSet will run on node although none of
// their Pods may be there yet: a DaemonSet of the component (ComponentOf, as the gate's
// toleration check reads it) whose required node affinity and nodeSelector match the node,
// by the scheduler's own matcher. Such a component holds the node like a Pod not ready.
func (r *Rule) ExpectedOn(node *corev1.Node, dss []appsv1.DaemonSet) map[string]bool {
	var out map[string]bool
	for i := range dss {
		comp := r.ComponentOf(&dss[i])
		if comp == "" || out[comp] {
			continue
		}
		ok, err := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: dss[i].Spec.Template.Spec}).Match(node)
		if err == nil && ok {
			if out == nil {
				out = map[string]bool{}
			}
			out[comp] = true
		}
	}
	return out
}

// Untolerated names, for each component ExpectedOn finds, a taint of the node that keeps
// every such DaemonSet of it off the node, as the DaemonSet controller judges it: a
// NoSchedule or NoExecute taint its Pod template does not tolerate. Taints that go on their
// own are left out (transient: among them every node.kubernetes.io/ taint, which that
// controller's tolerations of every daemon Pod cover where they must), and so are those own
// reports true for: the gate's own, which its releases lift. The component still holds the node (a startup taint
// of someone else's may be about to go), but the hold is explained, not silent: a GPU
// node's nvidia.com/gpu that a DaemonSet does not tolerate holds it until maxHold.
func (r *Rule) Untolerated(node *corev1.Node, dss []appsv1.DaemonSet, own func(corev1.Taint) bool) map[string]string {
	var out map[string]string
	free := map[string]bool{}
	for i := range dss {
		ds := &dss[i]
		comp := r.ComponentOf(ds)
		if comp == "" || free[comp] {
			continue
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: ds.Spec.Template.Spec}).Match(node); err != nil || !ok {
			continue
		}
		taint, blocked := untolerated(node, &ds.Spec.Template.Spec, own)
		if !blocked {
			free[comp] = true
			delete(out, comp)
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, named := out[comp]; !named {
			out[comp] = fmt.Sprintf("daemonset %s/%s does not tolerate taint %s", ds.Namespace, ds.Name, taint.ToString())
		}
	}
	return out
}

// untolerated is the first taint of the node, neither own nor transient, that a daemon Pod
// of spec does not tolerate.
func untolerated(node *corev1.Node, spec *corev1.PodSpec, own func(corev1.Taint) bool) (corev1.Taint, bool) {
	return v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations, func(t *corev1.Taint) bool {
		return (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !transient(*t) && (own == nil || !own(*t))
	}, true)
}

// transientPrefixes are the key prefixes of taints that mark a phase of a node's life and
// go on their own: the node lifecycle controller's (a new node is not-ready until its
// network is up, and most init DaemonSets do not tolerate that), a cloud provider's before
// its controller initializes the node, an autoscaler's startup, registration and
// disruption taints. A DaemonSet kept off by one lands once it goes: the bench saw every
// joining node reported blocked by not-ready before this list.
var transientPrefixes = []string{"node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/", "readiness.k8s.io/",
	"startup-taint.cluster-autoscaler.kubernetes.io/", "ignore-taint.cluster-autoscaler.kubernetes.io/", "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler"}

func transient(t corev1.Taint) bool {
	return slices.ContainsFunc(transientPrefixes, func(p string) bool { return strings.HasPrefix(t.Key, p) })
}

// SelectorKeys are the node label keys the rule's node selector reads.
func (r *Rule) SelectorKeys() []string { return LabelKeys(r.compiled().nodes) }

// LabelKeys are the label keys a selector reads, the negative requirements' among them
// (!key and key!=v read the key too); RequiredKeys are those a match must carry.
func LabelKeys(sel labels.Selector) []string {
	reqs, _ := sel.Requirements()
	keys := make([]string, len(reqs))
	for i, req := range reqs {
		keys[i] = req.Key()
	}
	return keys
}

// LabelOutside finds a DaemonSet of the rule's components whose required node selector
// or affinity reads a node label that keeps says a Node's copy may lack: ExpectedOn, given
// that copy, could find the component not expected where it will run. It returns that
// DaemonSet's namespace/name and the key, or "" and "".
func (r *Rule) LabelOutside(dss []appsv1.DaemonSet, keeps func(key string) bool) (ds, key string) {
	for i := range dss {
		if r.ComponentOf(&dss[i]) == "" {
			continue
		}
		for _, k := range AffinityKeys(&dss[i].Spec.Template.Spec) {
			if !keeps(k) {
				return dss[i].Namespace + "/" + dss[i].Name, k
			}
		}
	}
	return "", ""
}

// AffinityKeys are the node label keys a Pod's required scheduling reads: its
// nodeSelector and the match expressions of its required node affinity (match fields
// read the node's name, not its labels).
func AffinityKeys(spec *corev1.PodSpec) []string {
	keys := slices.Sorted(maps.Keys(spec.NodeSelector))
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				keys = append(keys, e.Key)
			}
		}
	}
	return keys
}

// Selectors are the rule's component Pod selectors, with their namespaces, for choosing
// the gate's Pod cache.
func (r *Rule) Selectors() (sels []labels.Selector, namespaces []string) {
	for _, comp := range r.compiled().components {
		sels = append(sels, comp.selector)
		namespaces = append(namespaces, comp.Namespace)
	}
	return sels, namespaces
}

// ConditionTypes are the node condition types the rule reads: a change of their status can
// change its decision.
func (r *Rule) ConditionTypes() []corev1.NodeConditionType {
	var out []corev1.NodeConditionType
	for _, c := range r.compiled().conditions {
		out = append(out, c.Type)
	}
	for _, m := range r.compiled().match {
		out = append(out, m.Type)
	}
	return out
}

// RequiredKeys are the label keys every Pod the selector matches must carry. Negative
// requirements (!=, notin, !key) match Pods without the key, so they do not count.
func RequiredKeys(sel labels.Selector) map[string]bool {
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

// ComponentNames are the names of the rule's components.
func (r *Rule) ComponentNames() []string {
	var out []string
	for _, comp := range r.compiled().components {
		out = append(out, comp.Name)
	}
	return out
}

// Distinct checks a set of rules: two with one name would share metrics and events; two
// with one taint key would release each other's nodes.
func Distinct(rules []*Rule, errs *Errors) {
	names, keys := map[string]int{}, map[string]int{}
	for i, r := range rules {
		if j, dup := names[r.Name]; dup {
			errs.Add(fmt.Sprintf("rules[%d].name", i), "%q: rules[%d] has the same name", r.Name, j)
		}
		if j, dup := keys[r.Taint.Key]; dup {
			errs.Add(fmt.Sprintf("rules[%d].taint.key", i), "%q: rules[%d] has the same taint key", r.Taint.Key, j)
		}
		names[r.Name], keys[r.Taint.Key] = i, i
	}
}

// PodScope is one selection of the Pods the gate caches and reads: those of one namespace
// ("" for every namespace) that a label selector matches.
type PodScope struct {
	Namespace string
	Selector  labels.Selector
}

// keyScope is the scope of the Pods in ns that carry key.
func keyScope(ns, key string) PodScope {
	r, _ := labels.NewRequirement(key, selection.Exists, nil)
	return PodScope{Namespace: ns, Selector: labels.NewSelector().Add(*r)}
}

// PodScopes picks the selections that hold every component's Pods, so that the gate never
// caches every Pod in the cluster. When one label key is required by every component of
// every rule, one scope: that key (the smallest such, so the choice is stable), in the
// components' namespace if they share one; one informer then holds them all. Otherwise
// each component is cached as it is labelled: one scope per component selector, in its
// namespace (or all), one informer each. A selector that requires no label (only != or
// notin) would select nearly every Pod, and is refused. With no component at all
// (conditions only) no Pod is ever read, and the key of fallback ("key=value") keeps the
// cache small.
func PodScopes(rules []*Rule, fallback string) ([]PodScope, error) {
	var all []PodScope
	namespaces := map[string]bool{}
	for _, r := range rules {
		sels, nss := r.Selectors()
		for i, sel := range sels {
			all = append(all, PodScope{Namespace: nss[i], Selector: sel})
			namespaces[nss[i]] = true
		}
	}
	if len(all) == 0 {
		key, _, _ := strings.Cut(fallback, "=")
		return []PodScope{keyScope("", key)}, nil
	}
	if key := commonKey(all); key != "" {
		ns := ""
		if len(namespaces) == 1 {
			ns = all[0].Namespace
		}
		return []PodScope{keyScope(ns, key)}, nil
	}
	var out []PodScope
	for _, sc := range all {
		if commonKey([]PodScope{sc}) == "" {
			return nil, fmt.Errorf("component selector %q requires no label (only != or notin): it would cache nearly every Pod", sc.Selector)
		}
		if !slices.ContainsFunc(out, func(o PodScope) bool {
			return o.Namespace == sc.Namespace && o.Selector.String() == sc.Selector.String()
		}) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// commonKey is the smallest label key every scope's selector requires, or "".
func commonKey(scopes []PodScope) string {
	counts := map[string]int{}
	for _, sc := range scopes {
		for k := range RequiredKeys(sc.Selector) {
			counts[k]++
		}
	}
	key := ""
	for k, n := range counts {
		if n == len(scopes) && (key == "" || k < key) {
			key = k
		}
	}
	return key
}

package rule

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// tainter's README example: both conditions, alternatives in the status.
var (
	pressureTaint = corev1.Taint{Key: "pressure", Value: "memory", Effect: corev1.TaintEffectNoExecute}
	tainterRule   = Rule{Name: "pressure", Mode: Condition, Taint: pressureTaint, Match: []Match{
		{Type: "NetworkInterfaceCard", Status: "Kaput|Ruined"},
		{Type: "PrivateLink", Status: "severed"},
	}, MaxTainted: ptr(intstr.FromInt32(100))}
)

func ptr[T any](v T) *T { return &v }

func withMark(n *corev1.Node) {
	n.Annotations = map[string]string{"startup.k8s.io/completedAt.pressure": "1"}
}

// withPlaced marks the pressure taint as placed by the gate for the rule of that name.
func withPlaced(name string) func(*corev1.Node) {
	return annotated(DefaultPlacedAnnotation+"."+name, PlacedValue(pressureTaint, ""))
}

func withPressureTaint(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, pressureTaint) }

func TestDecideCondition(t *testing.T) {
	nic := func(s corev1.ConditionStatus) func(*corev1.Node) { return withCondition("NetworkInterfaceCard", s) }
	link := withCondition("PrivateLink", "severed")
	keep := tainterRule
	keep.KeepAfterClear = true
	renamed := tainterRule
	renamed.Name, renamed.PlacedAnnotation = "memory", DefaultPlacedAnnotation+".pressure" // the record, named after the taint, kept
	narrowed := tainterRule
	narrowed.NodeSelector, narrowed.PlacedAnnotation = "pool=gpu", DefaultPlacedAnnotation+".pressure"
	narrowedKeep := narrowed
	narrowedKeep.KeepAfterClear = true
	tests := []struct {
		name string
		rule Rule
		node *corev1.Node
		want ConditionDecision
	}{
		{"both match: taint", tainterRule, node(nic("Ruined"), link),
			ConditionDecision{Match: true, Taint: true, Reason: "node conditions match NetworkInterfaceCard=~Kaput|Ruined, PrivateLink=~severed"}},
		{"both match, already tainted: nothing", tainterRule, node(nic("Kaput"), link, withPressureTaint),
			ConditionDecision{Match: true, Reason: "node conditions match NetworkInterfaceCard=~Kaput|Ruined, PrivateLink=~severed"}},
		{"one condition only: never", tainterRule, node(nic("Kaput")),
			ConditionDecision{Reason: "node condition PrivateLink is absent"}},
		{"the status regex is anchored", tainterRule, node(nic("NotKaput"), link),
			ConditionDecision{Reason: "node condition NetworkInterfaceCard is NotKaput, not Kaput|Ruined"}},
		{"cleared, our taint: clear", tainterRule, node(nic("Fine"), link, withPressureTaint, withMark),
			ConditionDecision{Clear: true, Reason: "node condition NetworkInterfaceCard is Fine, not Kaput|Ruined"}},
		{"cleared, keepAfterClear: keep", keep, node(nic("Fine"), link, withPressureTaint, withMark),
			ConditionDecision{Reason: "node condition NetworkInterfaceCard is Fine, not Kaput|Ruined; keepAfterClear: the operator removes the taint"}},
		{"cleared, keepAfterClear, operator removed it: drop the mark", keep, node(nic("Fine"), link, withMark),
			ConditionDecision{Clear: true, Reason: "node condition NetworkInterfaceCard is Fine, not Kaput|Ruined"}},
		{"cleared, a taint the rule did not place: never lifted", tainterRule, node(nic("Fine"), link, withPressureTaint),
			ConditionDecision{Reason: "node condition NetworkInterfaceCard is Fine, not Kaput|Ruined"}},
		{"cleared, placed by the rule before its rename: clear", renamed, node(nic("Fine"), link, withPressureTaint, withPlaced("pressure")),
			ConditionDecision{Clear: true, Reason: "node condition NetworkInterfaceCard is Fine, not Kaput|Ruined"}},
		{"still matching, left the selector: clear", narrowed, node(nic("Kaput"), link, withPressureTaint, withMark),
			ConditionDecision{Clear: true, Left: true, Reason: `the node left the rule's selector "pool=gpu": its taint comes off`}},
		{"left the selector, keepAfterClear: clear all the same", narrowedKeep, node(nic("Fine"), link, withPressureTaint, withPlaced("pressure")),
			ConditionDecision{Clear: true, Left: true, Reason: `the node left the rule's selector "pool=gpu": its taint comes off`}},
		{"left the selector, a taint the rule did not place: never lifted", narrowed, node(nic("Kaput"), link, withPressureTaint),
			ConditionDecision{Reason: "the rule does not select the node"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compile(t, tt.rule)
			r.CompletedAnnotation = "startup.k8s.io/completedAt.pressure"
			if diff := cmp.Diff(tt.want, DecideCondition(r, tt.node)); diff != "" {
				t.Errorf("DecideCondition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllowTaint(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)) }
	matching := func(name string, sec int64, opts ...func(*corev1.Node)) *corev1.Node {
		n := node(opts...)
		n.Name = name
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: "NetworkInterfaceCard", Status: "Kaput", LastTransitionTime: at(sec)},
			{Type: "PrivateLink", Status: "severed", LastTransitionTime: at(sec)},
		}
		return n
	}
	idle := func(name string) *corev1.Node { n := node(); n.Name = name; return n }
	// Ten nodes; three match. The budget is 20%: two nodes.
	nodes := []*corev1.Node{
		matching("c", 1), matching("b", 2), matching("a", 2),
		idle("d"), idle("e"), idle("f"), idle("g"), idle("h"), idle("i"), idle("j"),
	}
	r := tainterRule
	r.MaxTainted = ptr(intstr.FromString("20%"))
	rl := compile(t, r)
	none := func(*corev1.Node) bool { return false }
	tests := []struct {
		name    string
		node    string
		tainted func(*corev1.Node) bool
		want    BudgetUse
	}{
		{"the earliest match goes first", "c", none, BudgetUse{Allowed: true, Used: 0, Budget: 2}},
		{"ties by name", "a", none, BudgetUse{Allowed: true, Used: 0, Budget: 2}},
		{"the third waits", "b", none, BudgetUse{Allowed: false, Used: 0, Budget: 2}},
		{"taints by others count", "a", func(n *corev1.Node) bool { return n.Name == "j" || n.Name == "i" }, BudgetUse{Allowed: false, Used: 2, Budget: 2}},
		{"an earlier match takes the place left", "b", func(n *corev1.Node) bool { return n.Name == "a" }, BudgetUse{Allowed: false, Used: 1, Budget: 2}},
		{"the place left", "c", func(n *corev1.Node) bool { return n.Name == "a" }, BudgetUse{Allowed: true, Used: 1, Budget: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n *corev1.Node
			for _, c := range nodes {
				if c.Name == tt.node {
					n = c
				}
			}
			if got := AllowTaint(rl, n, nodes, tt.tainted); got != tt.want {
				t.Errorf("AllowTaint(%s) = %+v, want %+v", tt.node, got, tt.want)
			}
		})
	}
}

func TestConditionRuleValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Rule)
		want []string
	}{
		{"a bad regular expression names the rule and the field", func(r *Rule) { r.Match[0].Status = "Kaput|(" },
			[]string{`rules[2] "pressure".match[0].status: "Kaput|(": not a regular expression`}},
		{"an unknown effect", func(r *Rule) { r.Taint.Effect = "Evict" },
			[]string{`rules[2] "pressure".taint.effect: "Evict": must be NoSchedule, PreferNoSchedule or NoExecute`}},
		{"no match", func(r *Rule) { r.Match = nil }, []string{`rules[2] "pressure".match: a condition rule needs at least one`}},
		{"fields of other modes", func(r *Rule) {
			r.Components = []Component{{Selector: "a=b"}}
			r.MaxHold = metav1.Duration{Duration: 1}
		}, []string{`rules[2] "pressure".components: a condition rule does not use it`, `rules[2] "pressure".maxHold: a condition rule does not use it`}},
		{"a budget on NoSchedule", func(r *Rule) { r.Taint.Effect = corev1.TaintEffectNoSchedule },
			[]string{`rules[2] "pressure".maxTainted: only a NoExecute rule evicts`}},
		{"a zero budget", func(r *Rule) { r.MaxTainted = ptr(intstr.FromInt32(0)) }, []string{`rules[2] "pressure".maxTainted: "0": must be a count of at least 1`}},
		{"a budget over 100%", func(r *Rule) { r.MaxTainted = ptr(intstr.FromString("150%")) }, []string{`rules[2] "pressure".maxTainted: "150%"`}},
		{"a budget that is not a number", func(r *Rule) { r.MaxTainted = ptr(intstr.FromString("ten")) }, []string{`rules[2] "pressure".maxTainted: "ten"`}},
		{"match in a startup rule", func(r *Rule) { r.Mode = Startup; r.MaxTainted = nil; r.Components = []Component{{Selector: "a=b"}} },
			[]string{`rules[2] "pressure".match: only a rule with mode "condition" uses it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tainterRule
			r.Match = append([]Match(nil), tainterRule.Match...)
			r.CompletedAnnotation = "startup.k8s.io/taintedAt.pressure"
			tt.mod(&r)
			var errs Errors
			r.Compile(`rules[2] "pressure"`, &errs)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want prefix %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestConditionRuleDefaultBudget(t *testing.T) {
	r := tainterRule
	r.MaxTainted = nil
	rl := compile(t, r)
	for _, c := range []struct{ selected, want int }{{1, 1}, {9, 1}, {10, 1}, {11, 2}, {100, 10}} {
		if got := rl.Budget(c.selected); got != c.want {
			t.Errorf("default budget of %d nodes = %d, want %d (10%%, rounded up)", c.selected, got, c.want)
		}
	}
}

func TestAddConditionTaintTimeAdded(t *testing.T) {
	rl := compile(t, tainterRule)
	n := node()
	rl.AddConditionTaint(n, t0.Add(1500*time.Millisecond))
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].TimeAdded == nil || !n.Spec.Taints[0].TimeAdded.Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("taints %+v, want the NoExecute taint with timeAdded at the second", n.Spec.Taints)
	}
	if n.Annotations[rl.CompletedAnnotation] == "" {
		t.Errorf("annotations %v: want the rule's mark", n.Annotations)
	}
	rl.ClearConditionTaint(n)
	if len(n.Spec.Taints) != 0 || len(n.Annotations) != 0 {
		t.Errorf("after clear: taints %v, annotations %v; want neither", n.Spec.Taints, n.Annotations)
	}
}

// TestApplyCondition: a condition write is made only while a decision on the node it is
// made on still asks for it (after a conflict, a fresh read the decision never saw).
func TestApplyCondition(t *testing.T) {
	rl := compile(t, tainterRule)
	nic, link := withCondition("NetworkInterfaceCard", "Kaput"), withCondition("PrivateLink", "severed")
	matching, tainted := node(nic, link), node(withMark, withPressureTaint)
	for _, tc := range []struct {
		name      string
		decidedOn *corev1.Node
		writeOn   *corev1.Node
		want      bool
	}{
		{"taint on the node decided on", matching, matching, true},
		{"taint, the match gone", matching, node(nic), false},
		{"taint, tainted since", matching, node(nic, link, withPressureTaint), false},
		{"clear on the node decided on", tainted, tainted, true},
		{"clear, the match back", tainted, node(withMark, withPressureTaint, nic, link), false},
		{"nothing decided", node(), node(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.writeOn.DeepCopy()
			if _, got := rl.ApplyCondition(DecideCondition(rl, tc.decidedOn), n, t0); got != tc.want {
				t.Errorf("ApplyCondition() = %t, want %t", got, tc.want)
			}
			if !tc.want && !cmp.Equal(n, tc.writeOn) {
				t.Errorf("declined, yet the node changed:\n%s", cmp.Diff(tc.writeOn, n))
			}
		})
	}
}

// TestConditionTaintOrphaned: a condition rule marks its taint as placed, like every taint
// the gate places, so that the rule removed, the taint is an orphan the gate lifts; while
// the rule runs, it owns it.
func TestConditionTaintOrphaned(t *testing.T) {
	marked := tainterRule
	marked.PlacedAnnotation = DefaultPlacedAnnotation + ".pressure"
	rl := compile(t, marked)
	n := node()
	rl.AddConditionTaint(n, t0)
	if got := Orphans([]*Rule{rl}, n, DefaultPlacedAnnotation, ""); len(got) != 0 {
		t.Errorf("orphans with the rule in force: %v, want none", got)
	}
	want := []Orphan{{Record: "pressure", Taint: corev1.Taint{Key: "pressure", Effect: corev1.TaintEffectNoExecute}}}
	if diff := cmp.Diff(want, Orphans(nil, n, DefaultPlacedAnnotation, "")); diff != "" {
		t.Errorf("orphans with the rule removed (-want +got):\n%s", diff)
	}
}

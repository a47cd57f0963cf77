package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
	"github.com/startupgate/startupgate/internal/golden"
	"github.com/startupgate/startupgate/sim/controlplane"
)

const statusRules = `apiVersion: config.startupgate.io/v1alpha1
kind: GateConfiguration
rules:
  - name: default
    nodeSelector: role=worker
    taint: {key: startup.k8s.io/initializing, value: wait, effect: NoSchedule}
    components: [{name: init, selector: startup.k8s.io/component=init}]
  - name: slow
    nodeSelector: slow=true
    taint: {key: startup.k8s.io/slow, effect: NoSchedule}
    components: [{name: init, selector: startup.k8s.io/component=init}]
    maxHold: 1s
    timeoutPolicy: keep
  - name: candidate
    dryRun: true
    nodeSelector: dry=true
    taint: {key: startup.k8s.io/candidate, effect: NoSchedule}
    components: [{name: init, selector: startup.k8s.io/component=init}]
`

// TestStatusOnEmbeddedPlane runs `gate status -o json` against a real apiserver holding a
// held node, a released one, a timed-out one (the keep policy) and one a dry-run rule would
// hold, and checks each row's state and reason.
func TestStatusOnEmbeddedPlane(t *testing.T) {
	plane := &controlplane.Embedded{}
	rc, err := plane.Start(context.Background())
	if err != nil {
		t.Fatalf("starting embedded plane: %v", err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	released := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10) // a minute after creation
	for _, n := range []*corev1.Node{
		node("status-held", map[string]string{"role": "worker"}, nil, corev1.Taint{Key: config.DefaultTaintKey, Value: "wait", Effect: corev1.TaintEffectNoSchedule}),
		node("status-released", map[string]string{"role": "worker"}, map[string]string{config.DefaultCompletedAnnotation: released}),
		node("status-slow", map[string]string{"slow": "true"}, nil, corev1.Taint{Key: "startup.k8s.io/slow", Effect: corev1.TaintEffectNoSchedule}),
		node("status-dry", map[string]string{"dry": "true"}, nil),
	} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(statusRules), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := parse([]string{"status", "-o", "json", "--config", file}, func(string) string { return "" }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// Five seconds on: the slow rule's one-second max hold has passed.
	if err := status(ctx, s, rc, &out, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	var rows []StatusRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, out.String())
	}
	type row struct{ Node, Rule, State, WaitingOn string }
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Node, r.Rule, r.State, r.WaitingOn})
	}
	want := []row{
		{"status-dry", "candidate", string(rule.PhaseWouldHold), "no init pod on the node yet"},
		{"status-held", "default", string(rule.PhaseHeld), "no init pod on the node yet"},
		{"status-released", "default", string(rule.PhaseReleased), ""},
		{"status-slow", "slow", string(rule.PhaseTimedOut), "maximum hold 1s reached: no init pod on the node yet"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gate status rows (-want +got):\n%s\n%s", diff, out.String())
	}
	for _, r := range rows {
		if r.Node == "status-released" && r.HeldFor.Duration <= 0 {
			t.Errorf("released node: held for %s, want the time from creation to release", r.HeldFor.Duration)
		}
		if r.Node == "status-dry" && !r.DryRun {
			t.Errorf("dry-run row not marked dryRun")
		}
	}
}

func node(name string, labels, annotations map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}, Spec: corev1.NodeSpec{Taints: taints}}
}

// TestGoldenStatusTable pins the table and wide forms of gate status.
func TestGoldenStatusTable(t *testing.T) {
	deadline := metav1.NewTime(time.Date(2026, 11, 23, 5, 30, 0, 0, time.UTC))
	rows := []StatusRow{
		{Node: "gpu-0", Rule: "default", Mode: "startup", State: string(rule.PhaseReleased), HeldFor: metav1.Duration{Duration: 42 * time.Second}, Taint: "startup.k8s.io/initializing=wait:NoSchedule"},
		{Node: "gpu-0", Rule: "gpu", Mode: "startup", State: string(rule.PhaseHeld), HeldFor: metav1.Duration{Duration: 3 * time.Minute},
			WaitingOn: `component "gpu-driver" not ready`, Deadline: &deadline, Taint: "startup.k8s.io/gpu-initializing:NoSchedule"},
		{Node: "gpu-0", Rule: "storage", Mode: "startup", State: string(rule.PhaseWouldHold), HeldFor: metav1.Duration{Duration: 3 * time.Minute},
			WaitingOn: "no init pod on the node yet", Taint: "startup.k8s.io/csi-initializing:NoSchedule", DryRun: true},
	}
	for _, tc := range []struct{ golden, format string }{{"table", ""}, {"wide", "wide"}} {
		var buf bytes.Buffer
		if err := printStatus(&buf, rows, tc.format); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, "status/"+tc.golden+".output.txt", buf.Bytes())
	}
}

// TestConditionStatusRows: a condition rule shows the nodes whose conditions match or that
// carry its taint, and why; the others have no row for it.
func TestConditionStatusRows(t *testing.T) {
	cfg, err := config.LoadConfig([]byte(`rules:
  - name: oos
    mode: condition
    taint: {key: node.kubernetes.io/out-of-service, value: nodeshutdown, effect: NoExecute}
    match: [{type: example.com/Preempted, status: "True"}]
    keepAfterClear: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	oos := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	mark := map[string]string{"startup.k8s.io/taintedAt.oos": "1"}
	preempted := func(n *corev1.Node, s corev1.ConditionStatus) *corev1.Node {
		n.Status.Conditions = []corev1.NodeCondition{{Type: "example.com/Preempted", Status: s}}
		return n
	}
	nodes := []corev1.Node{
		*preempted(node("tainted", nil, mark, oos), corev1.ConditionTrue),
		*preempted(node("waiting", nil, nil), corev1.ConditionTrue),
		*preempted(node("kept", nil, mark, oos), corev1.ConditionFalse),
		*preempted(node("by-hand", nil, nil, oos), corev1.ConditionFalse),
		*preempted(node("healthy", nil, nil), corev1.ConditionFalse),
	}
	got := map[string]string{}
	for _, r := range statusRows(&cfg, nodes, nil, nil, nil, time.Now()) {
		got[r.Node] = r.State
	}
	want := map[string]string{"tainted": string(rule.PhaseTainted), "waiting": string(rule.PhaseMatching), "kept": string(rule.PhaseKept), "by-hand": string(rule.PhaseTainted)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// TestSuspendedStatusRows: a suspended rule's nodes show as suspended, with what the rule
// would do running; a node it released before keeps its released row.
func TestSuspendedStatusRows(t *testing.T) {
	cfg := defaultRuleWith(t, "suspend: true")
	nodes := []corev1.Node{
		*node("held", nil, nil, gateTaint),
		*node("joined-while-suspended", nil, nil),
		*node("released", nil, map[string]string{config.DefaultCompletedAnnotation: "1"}),
	}
	got := map[string]string{}
	waiting := map[string]string{}
	for _, r := range statusRows(&cfg, nodes, nil, nil, nil, time.Now()) {
		got[r.Node], waiting[r.Node] = r.State, r.WaitingOn
	}
	want := map[string]string{"held": string(rule.PhaseSuspended), "joined-while-suspended": string(rule.PhaseSuspended), "released": string(rule.PhaseReleased)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if !strings.Contains(waiting["held"], "running, it would be "+string(rule.PhaseHeld)) {
		t.Errorf("held node's reason = %q, want what the running rule would do", waiting["held"])
	}
}

// TestReplaceStatusRows: under timeoutPolicy replace, a timed-out node says what becomes of
// it, by the budget and its NodePool's storm guard as read: waiting for a slot, stopped by
// the guard, or kept for want of a NodeClaim or of a readable NodePool; a marked node is
// replacing.
func TestReplaceStatusRows(t *testing.T) {
	cfg := defaultRuleWith(t, "maxHold: 5m", "timeoutPolicy: replace")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	claimed := func(name, pool string, annotations map[string]string) corev1.Node {
		n := node(name, map[string]string{rule.KarpenterNodePoolLabel: pool}, annotations, gateTaint)
		n.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: rule.KarpenterAPIVersion, Kind: rule.KarpenterNodeClaimKind, Name: "claim-" + name, UID: "u"}}
		return *n
	}
	bare := *node("no-karpenter", nil, nil, gateTaint)
	bare.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	nodes := []corev1.Node{
		claimed("being-replaced", "a", map[string]string{config.DefaultCompletedAnnotation + "_replaced": "1"}),
		claimed("waits-for-a-slot", "a", nil),
		claimed("guarded", "b", nil),
		claimed("pool-unreadable", "c", nil),
		bare,
	}
	pools := map[string]poolRead{
		"a": {},
		"b": {annotations: map[string]string{config.DefaultCompletedAnnotation + "_timeouts": fmt.Sprintf("3@%d", now.Add(-time.Minute).Unix())}},
		"c": {err: errors.New("nodepools.karpenter.sh is forbidden")},
	}
	got := map[string]string{}
	for _, r := range statusRows(&cfg, nodes, nil, nil, pools, now) {
		got[r.Node] = r.State + ": " + r.WaitingOn
	}
	for name, want := range map[string]string{
		"being-replaced":   "replacing: replacing: its NodeClaim is deleted",
		"waits-for-a-slot": "timed-out: maximum hold 5m0s reached: no init pod on the node yet; 1 of 1 replacements in flight",
		"guarded":          "3 nodes of NodePool b timed out in a row with none warming: replacements stopped there",
		"pool-unreadable":  "nodepools.karpenter.sh is forbidden: kept held",
		"no-karpenter":     "no NodeClaim owns the node",
	} {
		if !strings.Contains(got[name], want) {
			t.Errorf("%s: %q, want it to say %q", name, got[name], want)
		}
	}
}

// gateTaint is the contract's startup taint.
var gateTaint = corev1.Taint{Key: config.DefaultTaintKey, Value: "wait", Effect: corev1.TaintEffectNoSchedule}

// defaultRuleWith is a validated config of one rule, the contract's default written out,
// with the given fields (YAML lines) added.
func defaultRuleWith(t *testing.T, fields ...string) config.Config {
	t.Helper()
	src := "rules:\n  - name: default\n    taint: {key: startup.k8s.io/initializing, value: wait, effect: NoSchedule}\n" +
		"    components: [{name: init, selector: startup.k8s.io/component=init}]\n"
	for _, f := range fields {
		src += "    " + f + "\n"
	}
	cfg, err := config.LoadConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

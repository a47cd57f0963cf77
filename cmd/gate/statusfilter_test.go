package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// TestStatusFilters: --held keeps the rows whose taint is on the node, --rule one rule's,
// and -l the nodes whose labels match; together they narrow a large cluster to the stuck
// nodes of a pool.
func TestStatusFilters(t *testing.T) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	held := corev1.Taint{Key: config.DefaultTaintKey, Value: "wait", Effect: corev1.TaintEffectNoSchedule}
	c := fake.NewClientBuilder().WithScheme(gate.Scheme()).WithObjects(
		node("a-held", map[string]string{"pool": "a"}, nil, held),
		node("a-released", map[string]string{"pool": "a"}, map[string]string{config.DefaultCompletedAnnotation: "1"}),
		node("b-held", map[string]string{"pool": "b"}, nil, held),
	).Build()
	for _, tc := range []struct {
		name     string
		sel      string
		held     bool
		rule     string
		wantRows []string
	}{
		{"everything", "", false, "", []string{"a-held", "a-released", "b-held"}},
		{"--held", "", true, "", []string{"a-held", "b-held"}},
		{"-l pool=a", "pool=a", false, "", []string{"a-held", "a-released"}},
		{"-l pool=a --held", "pool=a", true, "", []string{"a-held"}},
		{"--rule other", "", false, "other", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := labels.Parse(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := readStatus(context.Background(), c, &cfg, time.Now(), sel)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range filterRows(rows, tc.held, tc.rule) {
				got = append(got, r.Node)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantRows, ",") {
				t.Errorf("rows for nodes %v, want %v", got, tc.wantRows)
			}
		})
	}
}

// TestLeaderLine: status names the replica that leads (the one whose logs say why a node is
// held), its lease's age and its image; and says so when it cannot tell.
func TestLeaderLine(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	ns := "startupgate-system"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaderLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("startupgate-7d9f-abcde_4c1e"), RenewTime: &metav1.MicroTime{Time: now.Add(-3 * time.Second)}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "startupgate-7d9f-abcde"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gate", Image: "ghcr.io/startupgate/startupgate:0.2.0"}}}}
	got := leaderLine(context.Background(), fake.NewClientBuilder().WithScheme(gate.Scheme()).WithObjects(lease, pod).Build(), ns, now)
	if want := "leader: startupgate-7d9f-abcde_4c1e, lease renewed 3s ago, image ghcr.io/startupgate/startupgate:0.2.0"; got != want {
		t.Errorf("leaderLine = %q, want %q", got, want)
	}
	got = leaderLine(context.Background(), fake.NewClientBuilder().WithScheme(gate.Scheme()).Build(), ns, now)
	if !strings.HasPrefix(got, "leader: unknown (Lease startupgate-system/startupgate.startup.k8s.io: ") {
		t.Errorf("leaderLine without a Lease = %q, want it to say the leader is unknown and why", got)
	}
}

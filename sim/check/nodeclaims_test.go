package check

import (
	"testing"
	"time"

	"github.com/startupgate/startupgate/sim/record"
)

// TestNodeClaims: each NodeClaim past the scenario's need is one violation, named and
// timed; as many as needed, fewer, or no bound at all is none.
func TestNodeClaims(t *testing.T) {
	start := time.Unix(1000, 0)
	claims := func(n int) []NodeClaim {
		var out []NodeClaim
		for i := range n {
			out = append(out, NodeClaim{Name: string(rune('a' + i)), Created: start.Add(time.Duration(i) * time.Second)})
		}
		return out
	}
	for _, tt := range []struct {
		name      string
		claims    []NodeClaim
		want      int
		wantNodes []string
	}{
		{name: "exactly as needed", claims: claims(3), want: 3},
		{name: "fewer", claims: claims(2), want: 3},
		{name: "none", want: 3},
		{name: "not judged", claims: claims(9), want: 0},
		{name: "two redundant", claims: claims(5), want: 3, wantNodes: []string{"d", "e"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := NodeClaims(tt.claims, tt.want, start)
			if len(got) != len(tt.wantNodes) {
				t.Fatalf("%d violations %v, want %d", len(got), got, len(tt.wantNodes))
			}
			for i, v := range got {
				if v.Kind != KindNodeClaimsRedundant || v.Node != tt.wantNodes[i] || v.AtMS != int64(tt.want+i)*1000 {
					t.Errorf("violation %d = %+v, want %s on %s at %dms", i, v, KindNodeClaimsRedundant, tt.wantNodes[i], (tt.want+i)*1000)
				}
			}
		})
	}
}

// TestDisruptedWhileHeld: a gated node deleted while held is a violation; one deleted after
// its release, one never deleted, one never tainted or not gated, one whose taint the gate
// lifted without a release (its rule no longer selects it) is not.
func TestDisruptedWhileHeld(t *testing.T) {
	start := time.Unix(1000, 0)
	at := marksEvery(start, time.Second)
	const taint = "startup.k8s.io/initializing:NoSchedule"
	recs := []record.NodeRecord{
		{Name: "held-deleted", Gated: true, Tainted: at(1), Deleted: at(5),
			Taints: []record.Snapshot{{Mark: at(1), Facts: []string{"other:NoExecute", taint}}}},
		{Name: "lifted-then-deleted", Gated: true, Tainted: at(1), Deleted: at(5),
			Taints: []record.Snapshot{{Mark: at(1), Facts: []string{taint}}, {Mark: at(3), Facts: []string{"other:NoExecute"}}}},
		{Name: "released-then-deleted", Gated: true, Tainted: at(1), Released: at(3), Deleted: at(5)},
		{Name: "held", Gated: true, Tainted: at(1)},
		{Name: "never-tainted", Gated: true, Deleted: at(5)},
		{Name: "not-gated", Tainted: at(1), Deleted: at(5)},
		{Name: "replaced", Gated: true, Tainted: at(1), Replacing: at(4), Deleted: at(5)},
	}
	got := DisruptedWhileHeld(recs, start, []string{taint})
	if len(got) != 1 || got[0].Kind != KindDisruptedWhileHeld || got[0].Node != "held-deleted" || got[0].AtMS != 5000 || got[0].RV != 5 {
		t.Errorf("violations %+v, want one %s on held-deleted at 5000ms, rv 5", got, KindDisruptedWhileHeld)
	}
}

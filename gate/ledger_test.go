package gate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLedgerPending: a mark counts from the ledger while the cache is behind its write,
// and no longer once the cache caught up (whatever it shows) or shows the mark.
func TestLedgerPending(t *testing.T) {
	at := func(rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: rv}}
	}
	tests := []struct {
		name            string
		written, cached string
		shows           bool
		want            bool
	}{
		{"the cache is behind the write", "10", "9", false, true},
		{"the cache caught up: it tells, though it shows no mark (taken off since)", "10", "10", false, false},
		{"the cache is past the write", "10", "11", false, false},
		{"the cache shows the mark", "10", "9", true, false},
		{"versions that cannot be compared: counts until the mark shows", "y", "x", false, true},
		{"versions that cannot be compared: the very version written", "x", "x", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l ledger
			l.note("r", at(tc.written))
			if got := l.pending("r", at(tc.cached), tc.shows); got != tc.want {
				t.Fatalf("pending = %v, want %v", got, tc.want)
			}
			if again := l.pending("r", at(tc.cached), false); again != tc.want {
				t.Errorf("asked again: pending = %v, want %v (dropped entries stay dropped)", again, tc.want)
			}
			if l.pending("other", at(tc.cached), false) {
				t.Error("another rule's mark counted")
			}
		})
	}
	var l ledger
	l.note("r", at("10"))
	l.forget("n")
	if l.pending("r", at("9"), false) {
		t.Error("a forgotten node still counts")
	}
}

package record

import (
	"sync"
)

// Ledger lists foreign taint removals that were intended (by the scenario's own taint
// writers), so that the checker can tell them from a taint the gate lost.
type Ledger struct {
	mu      sync.Mutex
	removed map[string]int
}

// Intend records that the simulator is about to remove key from node on purpose.
func (l *Ledger) Intend(node, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.removed == nil {
		l.removed = map[string]int{}
	}
	l.removed[node+"\x00"+key]++
}

// Removed reports whether a removal of key from node was intended, consuming it.
func (l *Ledger) Removed(node, key string) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := node + "\x00" + key
	if l.removed[k] > 0 {
		l.removed[k]--
		return true
	}
	return false
}

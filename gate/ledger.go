package gate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ledger holds, by rule name, the nodes this process wrote a counted mark on (a budgeted
// taint, a replacement's mark), by node name, with the resourceVersion the write made. A
// decision that counts marks from the cache alone can miss one just written and pass its
// budget, and a late view can show the nodes in another order than the writes saw them;
// so a mark counts from the ledger until the cache has caught up with its write. Its
// owner's lock guards it.
type ledger map[string]map[string]string

// note records the write of a mark on node under rule.
func (l *ledger) note(rule string, written *corev1.Node) {
	if *l == nil {
		*l = ledger{}
	}
	if (*l)[rule] == nil {
		(*l)[rule] = map[string]string{}
	}
	(*l)[rule][written.Name] = written.ResourceVersion
}

// pending reports whether the mark written on the cached node under rule still counts
// from the ledger: the cache is behind the write. An entry is dropped once the cache has
// caught up with the write (or, for versions it cannot compare, holds that very version or
// shows the mark): the cache tells from there on, also that someone took the mark off.
func (l ledger) pending(rule string, cached *corev1.Node, shows bool) bool {
	rv, ok := l[rule][cached.Name]
	if !ok {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, rv)
	if shows || cached.ResourceVersion == rv || err == nil && c >= 0 {
		delete(l[rule], cached.Name)
		return false
	}
	return true
}

// drop forgets node's mark under rule: this process took it off.
func (l ledger) drop(rule, node string) { delete(l[rule], node) }

// forget drops node under every rule: it is gone.
func (l ledger) forget(node string) {
	for _, nodes := range l {
		delete(nodes, node)
	}
}

package watch

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/startupgate/startupgate/sim/record"
)

// ResolveReleases makes each released node's Released exact enough to judge its bindings.
// The node stream can miss versions (after a broken watch, a re-list hands over only the
// newest), so the first version seen released may be later than the release itself, and
// a workload Pod bound in between would look early (after an apiserver restart, the first
// version seen released can be the next status report). For each binding between Held and
// Released, it reads the node
// as it was at the binding's resourceVersion (a list at that exact revision, from etcd's
// history), and moves Released back to the first version read released. A binding is
// still judged only by what the API held at its resourceVersion.
func (r *Recorder) ResolveReleases(ctx context.Context, cs kubernetes.Interface) error {
	type open struct {
		uid, name      string
		held, released uint64
		bound          []uint64
	}
	var opens []open
	r.mu.Lock()
	for _, rec := range r.nodes {
		o := open{uid: rec.UID, name: rec.Name, held: rec.Held.RV, released: rec.Released.RV}
		for _, b := range rec.Bindings {
			// Only a binding that would be a violation is worth a read: each node's init
			// Pod is commonly bound between its last version held and its release.
			if !b.Tolerates && !b.Init && !rec.Released.IsZero() && b.Mark.RV > o.held && b.Mark.RV < o.released {
				o.bound = append(o.bound, b.Mark.RV)
			}
		}
		if len(o.bound) > 0 {
			opens = append(opens, o)
		}
	}
	r.mu.Unlock()
	for _, o := range opens {
		at := func(rv uint64) (bool, uint64, error) { return r.releasedAt(ctx, cs, o.name, o.uid, rv) }
		released, err := record.FirstReleased(o.held, o.released, o.bound, at)
		if err != nil {
			return fmt.Errorf("node %s: %w", o.name, err)
		}
		r.mu.Lock()
		r.nodes[o.uid].Released.RV = released
		r.mu.Unlock()
	}
	return nil
}

// releasedAt reads the node incarnation uid as it was at resourceVersion rv: whether it
// was released then, and the version it had.
func (r *Recorder) releasedAt(ctx context.Context, cs kubernetes.Interface, name, uid string, at uint64) (bool, uint64, error) {
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion:      strconv.FormatUint(at, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		return false, 0, fmt.Errorf("reading it at rv %d: %w", at, err)
	}
	if len(l.Items) != 1 || string(l.Items[0].UID) != uid {
		return false, 0, fmt.Errorf("at rv %d, found %d nodes of that name, not incarnation %s", at, len(l.Items), uid)
	}
	return r.released(&l.Items[0]), rv(&l.Items[0]), nil
}

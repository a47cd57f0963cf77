package autoscaler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/startupgate/startupgate/sim/kubelet"
)

// nodeWatch keeps every version of Karpenter's Nodes from a watch that began before the
// first of them was created, so that a Node's first version is the one its CREATE stored.
type nodeWatch struct {
	mu       sync.Mutex
	versions map[string][]*corev1.Node
	added    map[string]bool // its first event was ADDED: the watch saw the CREATE
}

func watchNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface) *nodeWatch {
	t.Helper()
	sel := kubelet.KWOKNodeLabel + "=fake"
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Fatalf("%d KWOK nodes before Karpenter started", len(list.Items))
	}
	w := &nodeWatch{versions: map[string][]*corev1.Node{}, added: map[string]bool{}}
	run(ctx, t, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel
		return cs.CoreV1().Nodes().Watch(ctx, o)
	}, func(e watch.Event) {
		n, ok := e.Object.(*corev1.Node)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.versions[n.Name]) == 0 {
			w.added[n.Name] = e.Type == watch.Added
		}
		w.versions[n.Name] = append(w.versions[n.Name], n)
	})
	return w
}

// first is each Node's first version, of the Nodes whose CREATE the watch saw.
func (w *nodeWatch) first() map[string]*corev1.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*corev1.Node{}
	for name, vs := range w.versions {
		if w.added[name] {
			out[name] = vs[0]
		}
	}
	return out
}

// history is the node's taints, one line per version that changed them.
func (w *nodeWatch) history(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	last := "-"
	for _, n := range w.versions[name] {
		var ts []string
		for _, t := range n.Spec.Taints {
			ts = append(ts, t.ToString())
		}
		if s := strings.Join(ts, " "); s != last {
			fmt.Fprintf(&b, "  rv %s: [%s]\n", n.ResourceVersion, s)
			last = s
		}
	}
	return b.String()
}

// run feeds every event from rv on to handle until ctx ends or the test does; a watch that
// the apiserver closes is resumed where it ended.
func run(ctx context.Context, t *testing.T, rv string, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), handle func(watch.Event)) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	go func() {
		defer close(done)
		for e := range rw.ResultChan() {
			handle(e)
		}
	}()
}

package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// TestNodeHistory: a node released, rebooted and re-gated reads back, oldest first, as its
// creation, its release on the first boot, the gate's events about it (not another node's,
// not another controller's), its re-gate for the second boot, and the taint it carries now.
func TestNodeHistory(t *testing.T) {
	cfg := config.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	unixAt := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	rec := cfg.CompletedAnnotation
	n := node("worker-0", nil, map[string]string{
		rec: unixAt(t0.Add(time.Minute)), rec + "_bootID": "b0",
		rec + "_regatedAt": unixAt(t0.Add(10*time.Minute)) + ",b1",
	}, corev1.Taint{Key: config.DefaultTaintKey, Value: "wait", Effect: corev1.TaintEffectNoSchedule})
	n.CreationTimestamp = metav1.NewTime(t0)
	event := func(name, about, reason string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: about}, Reason: reason, Type: corev1.EventTypeNormal,
			Message: reason + " message", EventTime: metav1.NewMicroTime(at)}
	}
	c := fake.NewClientBuilder().WithScheme(gate.Scheme()).WithObjects(n,
		event("held", "worker-0", gate.ReasonHeld, t0.Add(time.Second)),
		event("released", "worker-0", gate.ReasonReleased, t0.Add(time.Minute)),
		event("regated", "worker-0", gate.ReasonRegated, t0.Add(10*time.Minute)),
		event("other-node", "worker-1", gate.ReasonHeld, t0.Add(2*time.Minute)),
		event("kubelet", "worker-0", "NodeReady", t0.Add(3*time.Minute)),
	).WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string {
		return []string{o.(*corev1.Event).InvolvedObject.Name}
	}).Build()
	h, err := nodeHistory(context.Background(), c, &cfg, "worker-0")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printHistory(&out, "worker-0", h); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	want := []string{"created", gate.ReasonHeld, "released on boot b0", gate.ReasonReleased, "re-gated for boot b1", gate.ReasonRegated, "now tainted " + config.DefaultTaintKey}
	last := -1
	for _, w := range want {
		i := strings.Index(out.String(), w)
		if i <= last {
			t.Errorf("%q at %d, want it after the last line found (at %d):\n%s", w, i, last, out.String())
		}
		last = max(last, i)
	}
	for _, not := range []string{"NodeReady", "worker-1"} {
		if strings.Contains(out.String(), not) {
			t.Errorf("the history names %s:\n%s", not, out.String())
		}
	}
}

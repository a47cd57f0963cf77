package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/startupgate/startupgate/sim/scenario"
)

// TestCleanupDeletesNodeEvents: a run's cleanup deletes the Events about its scenario's
// Nodes from "default", and no other Event there: not one about a Node of another scenario
// whose name begins with this one's, nor one about an object of another kind that has the
// same name. Left behind, those Events made every later List of "default" slower, until
// over a soak one outlived its bound (deleteNodeEvents).
func TestCleanupDeletesNodeEvents(t *testing.T) {
	rc := sharedPlane(t)
	ctx := context.Background()
	sc, err := scenario.Parse([]byte(`name: cleanup-events
description: its cleanup deletes the Events about its nodes
timeline:
  - at: 0s
    join: {count: 2, prefix: n}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := r.newRun(sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	events := r.client.EventsV1().Events(metav1.NamespaceDefault)
	about := map[string]corev1.ObjectReference{
		"ours-0":          {Kind: "Node", Name: "cleanup-events-n0"},
		"ours-1":          {Kind: "Node", Name: "cleanup-events-n1"},
		"other-scenario":  {Kind: "Node", Name: "cleanup-events-keep-n0"},
		"other-kind":      {Kind: "ConfigMap", Namespace: metav1.NamespaceDefault, Name: "cleanup-events-n0"},
		"unknown-to-join": {Kind: "Node", Name: "cleanup-events-n2"},
	}
	for name, ref := range about {
		e := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "cleanup-events." + name},
			EventTime:           metav1.NewMicroTime(time.Now()),
			ReportingController: "startupgate.io/sim-test",
			ReportingInstance:   "sim-test",
			Action:              "Test",
			Reason:              "CleanupTest",
			Regarding:           ref,
			Type:                corev1.EventTypeNormal,
		}
		if _, err := events.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = events.Delete(context.Background(), e.Name, metav1.DeleteOptions{}) })
	}
	if err := rn.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := events.List(ctx, metav1.ListOptions{FieldSelector: "reason=CleanupTest"})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range list.Items {
		left = append(left, e.Name)
	}
	slices.Sort(left)
	want := []string{"cleanup-events.other-kind", "cleanup-events.other-scenario", "cleanup-events.unknown-to-join"}
	if !slices.Equal(left, want) {
		t.Errorf("Events left after cleanup %v, want %v", left, want)
	}
}

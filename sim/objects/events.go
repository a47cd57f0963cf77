package objects

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AwaitEvents counts the Events of each reason, again every interval until each has been
// seen at least once or deadline has passed, and returns the last counts (and the first
// error, which ends the wait). Every expectation about Events needs at least one of each
// reason, and an Event reaches the apiserver after the action it reports: client-go's
// broadcaster writes it from a goroutine and, after a write that failed on the way (a
// dropped connection or a handshake timeout on a loaded plane), tries again only 10 s
// later, while a short run may settle before that. The deadline is the run's timeout, so a
// missing Event still fails the run, once the scenario's own bound has passed.
func AwaitEvents(reasons []string, deadline time.Time, interval time.Duration, count func(reason string) (int, error)) (map[string]int, error) {
	for {
		counts, seen := make(map[string]int, len(reasons)), true
		for _, reason := range reasons {
			n, err := count(reason)
			if err != nil {
				return counts, err
			}
			counts[reason] = n
			seen = seen && n > 0
		}
		if seen || !time.Now().Add(interval).Before(deadline) {
			return counts, nil
		}
		time.Sleep(interval)
	}
}

// CountEvents counts events.k8s.io Events with this reason about the scenario's objects,
// created since the run began (since): those about its Nodes (nodes: the scenario's and its
// autoscaler's), which land in "default", and those about
// objects in its namespace. Each List reads every Event in its namespace (the apiserver
// keeps no watch cache for Events), so "default" must not grow with the runs before this
// one: each run's cleanup deletes the Events about its Nodes (deleteNodeEvents). A List
// that outlives its timeout is an error here, never a count of 0, which would blame the
// gate for a List that failed. Node names repeat from run to run of a
// scenario, and an Event may outlive its run's cleanup (one written late), so without the
// time an earlier run's Events (a negative control's, say) could count here.
func (o Run) CountEvents(reason string, nodes map[string]bool, since time.Time) (int, error) {
	n := 0
	for _, ns := range []string{metav1.NamespaceDefault, o.Namespace} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := o.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		cancel()
		if err != nil {
			return 0, fmt.Errorf("listing %s events in %s: %w", reason, ns, err)
		}
		for _, e := range list.Items {
			ours := e.Regarding.Namespace == o.Namespace || e.Regarding.Kind == "Node" && nodes[e.Regarding.Name]
			if ours && !e.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
				n++
			}
		}
	}
	return n, nil
}

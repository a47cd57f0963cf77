package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// A node's history (gate status --node NAME): what the gate keeps on the Node, which lasts
// as long as the Node, and the gate's events about it, which the apiserver keeps for about
// an hour. Together they say when the node was created, tainted, released, re-gated and
// replaced, and why it waits now, without reading the gate's logs.

// entry is one line of a history.
type entry struct {
	at   time.Time
	from string // "node" (a record on the Node) or "event" (and its type)
	what string
}

// nodeHistory reads the node, its records and the gate's events about it, oldest first.
func nodeHistory(ctx context.Context, c client.Reader, cfg *config.Config, name string) ([]entry, error) {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	out := append([]entry{{at: node.CreationTimestamp.Time, from: "node", what: "created"}}, records(cfg, node)...)
	evs, err := nodeEvents(ctx, c, name)
	if err != nil {
		out = append(out, entry{from: "events", what: fmt.Sprintf("not read: %v", err)})
	}
	out = append(out, evs...)
	slices.SortStableFunc(out, func(a, b entry) int { return a.at.Compare(b.at) })
	own := cfg.OwnTaint(node)
	for _, t := range node.Spec.Taints {
		if own(t) {
			out = append(out, entry{from: "node", what: "now tainted " + t.ToString()})
		}
	}
	return out, nil
}

// records are the gate's annotations on the node, each as what it says happened: a
// release (the completion annotation of a record, with the boot of its _bootID), a re-gate
// (_regatedAt: when, and for which boot), a replacement (_replaced), and the taints it
// placed (the placed annotation of a record).
func records(cfg *config.Config, node *corev1.Node) []entry {
	completed, placed := cfg.CompletedAnnotation, cmp.Or(cfg.PlacedAnnotation, rule.DefaultPlacedAnnotation)
	var out []entry
	for _, k := range slices.Sorted(maps.Keys(node.Annotations)) {
		v := node.Annotations[k]
		base, suffix, _ := strings.Cut(k, "_")
		record := strings.TrimPrefix(strings.TrimPrefix(base, completed), ".")
		switch {
		case strings.HasPrefix(k, placed+"."):
			out = append(out, entry{from: "node", what: fmt.Sprintf("the gate placed taint %s (record %s)", v, strings.TrimPrefix(k, placed+"."))})
		case !strings.HasPrefix(base, completed):
		case suffix == "":
			what := "released" + ofRecord(record)
			if boot := node.Annotations[k+"_bootID"]; boot != "" {
				what += " on boot " + boot
			}
			out = append(out, entry{at: unix(v), from: "node", what: what})
		case suffix == "regatedAt":
			at, boot, _ := strings.Cut(v, ",")
			out = append(out, entry{at: unix(at), from: "node", what: fmt.Sprintf("re-gated%s for boot %s", ofRecord(record), boot)})
		case suffix == "replaced":
			out = append(out, entry{at: unix(v), from: "node", what: "its NodeClaim deleted for replacement" + ofRecord(record)})
		}
	}
	return out
}

// nodeEvents are the gate's events about the node (reason StartupGate...), in every
// namespace: the apiserver files a Node's events in default, a recorder may elsewhere.
func nodeEvents(ctx context.Context, c client.Reader, name string) ([]entry, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.MatchingFields{"involvedObject.name": name}); err != nil {
		return nil, err
	}
	var out []entry
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "Node" || !strings.HasPrefix(e.Reason, "StartupGate") {
			continue
		}
		at := e.EventTime.Time
		for _, t := range []time.Time{e.LastTimestamp.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
			if at.IsZero() {
				at = t
			}
		}
		what := e.Reason + ": " + e.Message
		if n := e.Count; n > 1 {
			what += fmt.Sprintf(" (%d times)", n)
		} else if e.Series != nil && e.Series.Count > 1 {
			what += fmt.Sprintf(" (%d times)", e.Series.Count)
		}
		out = append(out, entry{at: at, from: "event " + e.Type, what: what})
	}
	return out, nil
}

// printHistory writes a history as a table, its times in UTC.
func printHistory(out io.Writer, name string, h []entry) error {
	fmt.Fprintf(out, "node %s: the records the gate keeps on it, and its events while the apiserver keeps them (about an hour)\n", name)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tFROM\tWHAT")
	for _, e := range h {
		at := "-"
		if !e.at.IsZero() {
			at = e.at.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", at, e.from, e.what)
	}
	return w.Flush()
}

// ofRecord names a record, but the default rule's, which has the plain completion
// annotation of the original contract.
func ofRecord(record string) string {
	if record == "" {
		return ""
	}
	return " (record " + record + ")"
}

func unix(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0)
}

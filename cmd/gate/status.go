package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// status prints, per node and rule, why the node is held (gate status), as of now.
func status(ctx context.Context, s *settings, rc *rest.Config, out io.Writer, now time.Time) error {
	c, cfg, err := clusterClient(ctx, s, rc)
	if err != nil {
		return err
	}
	if s.statusHistory != "" {
		h, err := nodeHistory(ctx, c, cfg, s.statusHistory)
		if err != nil {
			return err
		}
		return printHistory(out, s.statusHistory, h)
	}
	sel, err := labels.Parse(s.statusSelector)
	if err != nil {
		return fmt.Errorf("-l %q: %w", s.statusSelector, err)
	}
	rows, err := readStatus(ctx, c, cfg, now, sel, s.statusNodes...)
	if err != nil {
		return err
	}
	rows = filterRows(rows, s.statusHeld, s.statusRule)
	if s.output != "json" {
		fmt.Fprintln(out, leaderLine(ctx, c, s.gateNamespace, now))
	}
	return printStatus(out, rows, s.output)
}

// filterRows keeps the rows --held and --rule ask for.
func filterRows(rows []StatusRow, held bool, ruleName string) []StatusRow {
	out := rows[:0:0]
	for _, r := range rows {
		if (!held || r.Holding) && (ruleName == "" || r.Rule == ruleName) {
			out = append(out, r)
		}
	}
	return out
}

// leaderLeaseName is the gate's leader election Lease (cmd/gate's LeaderElectionID).
const leaderLeaseName = "startupgate.startup.k8s.io"

// leaderLine says which gate replica leads and what it runs, from the leader Lease and the
// leader's Pod: the one that writes Nodes, and whose logs say why. What cannot be read is
// said, not an error: status works with read access to Nodes and Pods alone.
func leaderLine(ctx context.Context, c client.Reader, ns string, now time.Time) string {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaderLeaseName}, lease); err != nil {
		return fmt.Sprintf("leader: unknown (Lease %s/%s: %v)", ns, leaderLeaseName, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" {
		return fmt.Sprintf("leader: none (Lease %s/%s has no holder)", ns, leaderLeaseName)
	}
	line := "leader: " + holder
	if lease.Spec.RenewTime != nil {
		line += fmt.Sprintf(", lease renewed %s ago", now.Sub(lease.Spec.RenewTime.Time).Round(time.Second))
	}
	pod := &corev1.Pod{}
	name, _, _ := strings.Cut(holder, "_") // controller-runtime's identity: <hostname>_<uuid>
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err == nil && len(pod.Spec.Containers) > 0 {
		line += ", image " + pod.Spec.Containers[0].Image
	}
	return line
}

// printStatus writes rows as a table, a wide table (with the deadline and the taint), or
// JSON.
func printStatus(out io.Writer, rows []StatusRow, format string) error {
	if format == "json" {
		if rows == nil {
			rows = []StatusRow{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "NODE\tRULE\tSTATE\tHELD FOR\tWAITING ON"
	if format == "wide" {
		head += "\tDEADLINE\tTAINT\tMODE"
	}
	fmt.Fprintln(w, head)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.Node, r.Rule, r.State, r.HeldFor.Duration, dash(r.WaitingOn))
		if format == "wide" {
			deadline := "-"
			if r.Deadline != nil {
				deadline = r.Deadline.UTC().Format(time.RFC3339)
			}
			line += fmt.Sprintf("\t%s\t%s\t%s", deadline, r.Taint, r.Mode)
		}
		fmt.Fprintln(w, line)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

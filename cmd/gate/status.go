package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
)

// status prints, per node and rule, why the node is held (gate status), as of now.
func status(ctx context.Context, s *settings, rc *rest.Config, out io.Writer, now time.Time) error {
	c, err := client.New(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	cfg, err := clusterConfig(ctx, c, s, os.Stderr)
	if err != nil {
		return err
	}
	rows, err := readStatus(ctx, c, cfg, now, s.statusNodes...)
	if err != nil {
		return err
	}
	return printStatus(out, rows, s.output)
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

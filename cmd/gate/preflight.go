package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/config"
)

// errPreflight is preflight's exit when it found a problem: the report says which.
var errPreflight = errors.New("preflight found problems (above)")

// preflight checks a live cluster against the config (the running gate's, or --config
// before an install), read-only but for one dry-run Node CREATE: what a first install gets
// wrong shows here, not as nodes held forever. It prints a report and fails when it found a
// problem.
func preflight(ctx context.Context, s *settings, rc *rest.Config, out io.Writer, now time.Time) error {
	c, cfg, err := clusterClient(ctx, s, rc)
	if err != nil {
		return err
	}
	return runPreflight(ctx, c, cfg, now, out)
}

// runPreflight is preflight on a client and a config.
func runPreflight(ctx context.Context, c client.Client, cfg *config.Config, now time.Time, out io.Writer) error {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var dss appsv1.DaemonSetList
	if err := c.List(ctx, &dss); err != nil {
		return fmt.Errorf("listing daemonsets: %w", err)
	}
	r := &report{out: out}
	r.exclude(cfg, nodes.Items)
	r.daemonSets(cfg, nodes.Items, dss.Items)
	r.webhook(ctx, c, cfg, nodes.Items)
	rows, err := readStatus(ctx, c, cfg, now, labels.Everything())
	if err != nil {
		return err
	}
	r.states(rows)
	if r.problems > 0 {
		return fmt.Errorf("%w: %d", errPreflight, r.problems)
	}
	fmt.Fprintln(out, "no problem found")
	return nil
}

// report writes preflight's findings, each "ok" or "PROBLEM", and counts the problems.
type report struct {
	out      io.Writer
	problems int
}

func (r *report) ok(format string, args ...any) { fmt.Fprintf(r.out, "ok       "+format+"\n", args...) }

func (r *report) problem(format string, args ...any) {
	r.problems++
	fmt.Fprintf(r.out, "PROBLEM  "+format+"\n", args...)
}

// exclude: each requirement matches some node, and some Ready node is excluded: the gate
// runs there, and comes back there when its Pods are all gone (failurePolicy Fail).
func (r *report) exclude(cfg *config.Config, nodes []corev1.Node) {
	ready := 0
	for i, e := range cfg.Exclude {
		sel, err := config.ExcludeSelector(e)
		if err != nil {
			r.problem("exclude[%d] %s %s %v: %v", i, e.Key, e.Operator, e.Values, err)
			continue
		}
		var names []string
		for j := range nodes {
			if sel.Matches(labels.Set(nodes[j].Labels)) {
				names = append(names, nodes[j].Name)
			}
		}
		if len(names) == 0 {
			r.problem("exclude[%d] %s matches no node: on this platform it names nothing (deploy/helm/startupgate/platforms)", i, sel)
			continue
		}
		r.ok("exclude[%d] %s matches %d node(s): %s", i, sel, len(names), sample(names))
	}
	for j := range nodes {
		if cfg.Excluded(&nodes[j]) && gate.NodeReady(&nodes[j]) {
			ready++
		}
	}
	if ready == 0 {
		r.problem("no Ready node matches exclude: the gate's Pods have nowhere they can always come back to")
	}
}

// daemonSets: every component of every rule has a DaemonSet, it tolerates the rule's taint,
// and it can land on each node the rule selects: a taint of the node it does not tolerate
// (a GPU pool's, a dedicated pool's) or a selector or affinity that leaves the node out
// would hold that node until maxHold.
func (r *report) daemonSets(cfg *config.Config, nodes []corev1.Node, dss []appsv1.DaemonSet) {
	for _, ds := range dss {
		if _, comp := cfg.ComponentOf(&ds); comp != "" && !cfg.Tolerates(ds.Spec.Template.Spec.Tolerations) {
			r.problem("daemonset %s/%s (component %q) does not tolerate every startup taint (%s)", ds.Namespace, ds.Name, comp, cfg.TaintList())
		}
	}
	for _, rl := range cfg.Gating() {
		blocked, missing := map[string][]string{}, map[string][]string{}
		selected := 0
		for i := range nodes {
			n := &nodes[i]
			if !rl.Matches(n) {
				continue
			}
			selected++
			expected := rl.ExpectedOn(n, dss)
			for _, comp := range rl.ComponentNames() {
				if !expected[comp] {
					missing[comp] = append(missing[comp], n.Name)
				}
			}
			for comp, why := range rl.Untolerated(n, dss, cfg.OwnTaint(n)) {
				blocked[comp+": "+why] = append(blocked[comp+": "+why], n.Name)
			}
		}
		if selected == 0 {
			r.ok("rule %s selects no node now", rl.Name)
			continue
		}
		for _, comp := range slices.Sorted(maps.Keys(missing)) {
			r.problem("rule %s: no DaemonSet of component %q targets %d of its %d node(s) (its nodeSelector or affinity leaves them out, or it has none): %s",
				rl.Name, comp, len(missing[comp]), selected, sample(missing[comp]))
		}
		for _, why := range slices.Sorted(maps.Keys(blocked)) {
			r.problem("rule %s: component %s on %d node(s): %s", rl.Name, why, len(blocked[why]), sample(blocked[why]))
		}
		if len(missing) == 0 && len(blocked) == 0 {
			r.ok("rule %s: every component's DaemonSet can land on its %d node(s)", rl.Name, selected)
		}
	}
}

// webhook: a dry-run CREATE of a node like one a rule selects comes back with the rule's
// taint. Under failurePolicy Ignore a webhook that cannot be reached admits it untainted.
func (r *report) webhook(ctx context.Context, c client.Writer, cfg *config.Config, nodes []corev1.Node) {
	if !cfg.Webhook {
		r.ok("webhook off in this config (the admission policy, or backfill, taints nodes)")
		return
	}
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("startupgate-preflight-%d", time.Now().UnixNano()), Labels: map[string]string{}}}
	for i := range nodes {
		if cfg.Gated(&nodes[i]) {
			maps.Copy(probe.Labels, nodes[i].Labels)
			delete(probe.Labels, corev1.LabelHostname)
			break
		}
	}
	want := cfg.Gated(probe)
	err := c.Create(ctx, probe, client.DryRunAll)
	switch {
	case err != nil:
		r.problem("webhook: a dry-run Node CREATE failed: %v", err)
	case want && !hasOwnTaint(cfg, probe):
		r.problem("webhook: a dry-run Node CREATE like a gated node came back without the startup taint (taints [%s]): the webhook is not called (expected before an install), or not reached under failurePolicy Ignore", taintList(probe.Spec.Taints))
	case want:
		r.ok("webhook: a dry-run Node CREATE came back tainted %s", taintList(probe.Spec.Taints))
	default:
		r.ok("webhook: a dry-run Node CREATE was admitted (no rule selects it, so untainted is right)")
	}
}

func taintList(ts []corev1.Taint) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ToString())
	}
	return strings.Join(out, ", ")
}

func hasOwnTaint(cfg *config.Config, n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, cfg.OwnTaint(n))
}

// states: what each rule does to the nodes now, by state, as gate status shows it.
func (r *report) states(rows []StatusRow) {
	counts := map[string]map[string]int{}
	for _, row := range rows {
		if counts[row.Rule] == nil {
			counts[row.Rule] = map[string]int{}
		}
		counts[row.Rule][row.State]++
	}
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		var parts []string
		for _, st := range slices.Sorted(maps.Keys(counts[name])) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[name][st], st))
		}
		r.ok("rule %s on the nodes now: %s (gate status --rule %s for each node)", name, strings.Join(parts, ", "), name)
	}
}

// sample names up to five of names, and how many more.
func sample(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

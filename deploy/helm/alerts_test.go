package helm_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	// alertsTest holds the promtool unit tests of every alert, on synthetic series.
	alertsTest = "testdata/alerts.test.yaml"
	// metricNames lists every metric the alerts and the dashboard read; sim's
	// TestMetricNamesExported checks each one against a running gate's /metrics.
	metricNames = "testdata/metric-names.txt"
	// promtoolPackage is where promtool comes from here (make test installs it).
	promtoolPackage = "Debian's prometheus package (apt-get install prometheus)"
)

var (
	alertsOn    = map[string]any{"alerts": map[string]any{"enabled": true}}
	dashboardOn = map[string]any{"dashboard": map[string]any{"enabled": true}}
)

// promtool finds promtool. A missing promtool fails the test rather than skipping it:
// untested alerts are what this test exists to prevent, and make test installs it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): install %s", err, promtoolPackage)
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ruleGroups renders the chart with vals and writes its PrometheusRule's groups to
// dir/rules.yaml, the file alerts.test.yaml names; it returns the groups.
func ruleGroups(t *testing.T, vals map[string]any, dir string) []any {
	t.Helper()
	pr := mustFind(t, renderChart(t, vals, nil), "PrometheusRule", "startupgate")
	groups, ok, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if !ok || err != nil || len(groups) == 0 {
		t.Fatalf("PrometheusRule has no spec.groups (%v)", err)
	}
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return groups
}

// alertRules returns every alerting rule of groups, by name.
func alertRules(t *testing.T, groups []any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			name, _ := r["alert"].(string)
			if name == "" {
				t.Fatalf("a rule without alert: %v", r)
			}
			if _, dup := out[name]; dup {
				t.Fatalf("alert %s defined twice", name)
			}
			out[name] = r
		}
	}
	return out
}

// TestAlertsAndDashboardOffByDefault: both need something installed beforehand (the
// prometheus-operator CRD, a Grafana sidecar), so neither renders unless asked for.
func TestAlertsAndDashboardOffByDefault(t *testing.T) {
	objs := renderChart(t, nil, nil)
	if o := find(objs, "PrometheusRule", "startupgate"); o != nil {
		t.Errorf("PrometheusRule rendered with the default values")
	}
	if o := find(objs, "ConfigMap", "startupgate-dashboard"); o != nil {
		t.Errorf("dashboard ConfigMap rendered with the default values")
	}
	// Both on, the chart still passes `helm lint --strict`.
	res := lint.RunAll(chartDir, map[string]any{"alerts": map[string]any{"enabled": true}, "dashboard": map[string]any{"enabled": true}},
		namespace, lint.WithKubeVersion(&kubeVersion))
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev {
			t.Errorf("lint with alerts and dashboard: %s", m)
		}
	}
}

// TestAlertRules: the rendered rules load in Prometheus (promtool check rules), every alert
// says what it means and what to do, and promtool's unit tests in alerts.test.yaml pass and
// cover every alert both firing and not firing.
func TestAlertRules(t *testing.T) {
	dir := t.TempDir()
	rules := alertRules(t, ruleGroups(t, alertsOn, dir))
	if out, err := runPromtool(t, dir, "check", "rules", "rules.yaml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	for name, r := range rules {
		for _, a := range []string{"summary", "description"} {
			if s, _, _ := unstructured.NestedString(r, "annotations", a); len(s) < 20 {
				t.Errorf("alert %s: annotation %s is %q, want a sentence", name, a, s)
			}
		}
		if s, _, _ := unstructured.NestedString(r, "labels", "severity"); s != "warning" && s != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", name, s)
		}
	}

	// The runbook: docs/operations.md has a row for each alert, with the anchor its
	// runbook_url names; and each alert waits longer than one event keeps it true.
	ops := string(readFile(t, "../../docs/operations.md"))
	for name, r := range rules {
		url, _, _ := unstructured.NestedString(r, "annotations", "runbook_url")
		anchor := strings.ToLower(name)
		if !strings.HasSuffix(url, "/docs/operations.md#"+anchor) || !strings.Contains(ops, `<a id="`+anchor+`"></a>`) {
			t.Errorf("alert %s: runbook_url %q, want docs/operations.md#%s, an anchor of its row", name, url, anchor)
		}
		if f, _, _ := unstructured.NestedString(r, "for"); f == "" {
			t.Errorf("alert %s has no for: one event would page", name)
		}
		if !strings.Contains(ops, "| `"+name+"` |") {
			t.Errorf("docs/operations.md has no row for alert %s (what it means, what to do)", name)
		}
	}

	fires, quiet := alertCases(t)
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if !fires[name] {
			t.Errorf("%s: no promtool test case in which alert %s fires", alertsTest, name)
		}
		if !quiet[name] {
			t.Errorf("%s: no promtool test case in which alert %s does not fire", alertsTest, name)
		}
	}
	for name := range fires {
		if rules[name] == nil {
			t.Errorf("%s tests alert %s, which the chart does not render", alertsTest, name)
		}
	}

	if out, err := promtoolTest(t, dir); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", alertsTest, err, out)
	} else {
		t.Logf("promtool test rules:\n%s", out)
	}
}

// promtoolTest runs alerts.test.yaml against dir/rules.yaml.
func promtoolTest(t *testing.T, dir string) (string, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), readFile(t, alertsTest), 0o644); err != nil {
		t.Fatal(err)
	}
	return runPromtool(t, dir, "test", "rules", "alerts.test.yaml")
}

// alertCases reads alerts.test.yaml: the alerts some case expects to fire, and those some
// case expects not to fire.
func alertCases(t *testing.T) (fires, quiet map[string]bool) {
	t.Helper()
	var f struct {
		RuleFiles          []string `json:"rule_files"`
		EvaluationInterval string   `json:"evaluation_interval"`
		Tests              []struct {
			Interval       string `json:"interval"`
			InputSeries    []any  `json:"input_series"`
			AlertRuleTests []struct {
				EvalTime  string `json:"eval_time"`
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, alertsTest), &f); err != nil {
		// Strict: a misspelt key would be a case promtool silently ignores.
		t.Fatalf("%s: %v", alertsTest, err)
	}
	if !slices.Equal(f.RuleFiles, []string{"rules.yaml"}) {
		t.Fatalf("%s: rule_files %v, want [rules.yaml] (the rendered rules)", alertsTest, f.RuleFiles)
	}
	fires, quiet = map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	return fires, quiet
}

// TestAlertTestsCatchDrift: the promtool tests can fail. With thresholds no series in them
// reaches, the cases that expect an alert must fail.
func TestAlertTestsCatchDrift(t *testing.T) {
	drifts := map[string]map[string]any{
		"held longer":          {"nodeHeldFor": "2h"},
		"retaint threshold":    {"retaintThreshold": 1000},
		"slow release":         {"slowReleaseSeconds": 100000},
		"budget held longer":   {"budgetExhaustedFor": "2h"},
		"gate down for longer": {"gateDownFor": "2h"},
		"another scrape job":   {"job": "other"},
	}
	for name, d := range drifts {
		t.Run(name, func(t *testing.T) {
			a := map[string]any{"enabled": true}
			maps.Copy(a, d)
			dir := t.TempDir()
			ruleGroups(t, map[string]any{"alerts": a}, dir)
			out, err := promtoolTest(t, dir)
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Errorf("promtool test rules with alerts %v: %v, want failed cases\n%s", d, err, out)
			}
		})
	}
}

// TestAlertValues: the values reach the rules: the scrape job, the labels of the object
// and of every alert.
func TestAlertValues(t *testing.T) {
	objs := renderChart(t, map[string]any{"alerts": map[string]any{
		"enabled": true, "job": "gate", "labels": map[string]any{"release": "kps"}, "ruleLabels": map[string]any{"team": "nodes"},
	}}, nil)
	pr := mustFind(t, objs, "PrometheusRule", "startupgate")
	if pr.GetLabels()["release"] != "kps" {
		t.Errorf("PrometheusRule labels %v lack release=kps", pr.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	for name, r := range alertRules(t, groups) {
		if s, _, _ := unstructured.NestedString(r, "labels", "team"); s != "nodes" {
			t.Errorf("alert %s: labels %v lack team=nodes", name, r["labels"])
		}
		expr, _ := r["expr"].(string)
		if !strings.Contains(expr, `job="gate"`) || strings.Contains(expr, "startupgate-metrics") {
			t.Errorf("alert %s: expr %q does not select job gate", name, expr)
		}
	}
}

// dashboardJSON renders the dashboard ConfigMap with vals and returns it and its JSON.
func dashboardJSON(t *testing.T, vals map[string]any) (*unstructured.Unstructured, map[string]any) {
	t.Helper()
	cm := mustFind(t, renderChart(t, vals, nil), "ConfigMap", "startupgate-dashboard")
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "startupgate.json")
	var d map[string]any
	if err := yaml.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return cm, d
}

// TestDashboard: the ConfigMap carries the sidecar's label (configurable), holds
// files/dashboard.json unchanged, and its panels show what operators watch.
func TestDashboard(t *testing.T) {
	cm, d := dashboardJSON(t, dashboardOn)
	if got := cm.GetLabels()["grafana_dashboard"]; got != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard=1", cm.GetLabels())
	}
	var file map[string]any
	if err := yaml.Unmarshal(readFile(t, "startupgate/files/dashboard.json"), &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(file, d); diff != "" {
		t.Errorf("the ConfigMap's dashboard differs from files/dashboard.json (-file +ConfigMap):\n%s", diff)
	}

	cm, _ = dashboardJSON(t, map[string]any{"dashboard": map[string]any{
		"enabled": true, "label": "example.com/dashboard", "labelValue": "yes", "namespace": "monitoring",
		"annotations": map[string]any{"grafana_folder": "Nodes"},
	}})
	if cm.GetLabels()["example.com/dashboard"] != "yes" || cm.GetNamespace() != "monitoring" || cm.GetAnnotations()["grafana_folder"] != "Nodes" {
		t.Errorf("dashboard ConfigMap ignores its values: namespace %s, labels %v, annotations %v", cm.GetNamespace(), cm.GetLabels(), cm.GetAnnotations())
	}

	// Each panel the issue asks for, by the metric it must read.
	exprs := dashboardExprs(d)
	for what, want := range map[string]string{
		"held nodes per rule":        "startupgate_gated_nodes",
		"hold time percentiles":      "histogram_quantile(0.99, sum by (rule, le) (rate(startupgate_hold_seconds_bucket",
		"release latency percentile": "histogram_quantile(0.99, sum by (rule, le) (rate(startupgate_release_latency_seconds_bucket",
		"releases":                   "startupgate_releases_total",
		"timeouts":                   "startupgate_timeouts_total",
		"re-taints":                  "startupgate_retaints_total",
		"condition taints":           "startupgate_condition_taints_total",
		"budget":                     "startupgate_budget_exhausted",
		"webhook results":            "startupgate_webhook_requests_total",
	} {
		if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("no dashboard panel shows %s (%s)", what, want)
		}
	}
}

// dashboardExprs returns every PromQL query of the dashboard: the panels' targets and the
// template variables' label_values() series.
func dashboardExprs(d map[string]any) []string {
	var out []string
	var targets func(v any)
	targets = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				out = append(out, e)
			}
			for _, c := range v {
				targets(c)
			}
		case []any:
			for _, c := range v {
				targets(c)
			}
		}
	}
	targets(d["panels"])
	vars, _, _ := unstructured.NestedSlice(d, "templating", "list")
	for _, v := range vars {
		q, _, _ := unstructured.NestedString(v.(map[string]any), "query", "query")
		if m := labelValues.FindStringSubmatch(q); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// labelValues is Grafana's label_values(SERIES, LABEL) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_]\w*\)$`)

// grafanaVars replaces Grafana's variables with what PromQL accepts in their place.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$rule", ".*", "$cluster", ".*")

// TestDashboardQueriesParse: every dashboard query is PromQL that Prometheus accepts, once
// Grafana has put in its variables; promtool checks them as recording rules.
func TestDashboardQueriesParse(t *testing.T) {
	_, d := dashboardJSON(t, dashboardOn)
	var rules []any
	for i, e := range dashboardExprs(d) {
		rules = append(rules, map[string]any{"record": fmt.Sprintf("dashboard:query%d", i), "expr": grafanaVars.Replace(e)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runPromtool(t, dir, "check", "rules", "dashboard.yaml"); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, b)
	}
}

// TestDashboardDefaultsReadTheGateOnly: with its variables at their defaults, the dashboard
// counts the gate's own replicas and reads its own leader, on a Prometheus that also scrapes
// another controller-runtime application (three replicas, one leading): promtool evaluates
// the "Replicas up" and leader panels' queries on such series.
func TestDashboardDefaultsReadTheGateOnly(t *testing.T) {
	_, d := dashboardJSON(t, dashboardOn)
	defaults := strings.NewReplacer("$__rate_interval", "5m", "$rule", ".*", "$cluster", ".*", "$job", defaultJob(t, d))
	var up, leader string
	for _, e := range dashboardExprs(d) {
		switch {
		case strings.HasPrefix(e, "sum(up{"):
			up = defaults.Replace(e)
		case strings.Contains(e, "leader_election_master_status"):
			leader = defaults.Replace(e)
		}
	}
	if up == "" || leader == "" {
		t.Fatalf("no Replicas up or leader panel among the dashboard's queries")
	}
	dir := t.TempDir()
	rules := map[string]any{"groups": []any{map[string]any{"name": "panels", "rules": []any{
		map[string]any{"record": "panel:replicas_up", "expr": up},
		map[string]any{"record": "panel:leader", "expr": leader},
	}}}}
	series := func(job, instance, metric, v string) map[string]any {
		return map[string]any{"series": fmt.Sprintf("%s{job=%q,instance=%q}", metric, job, instance), "values": v}
	}
	tests := map[string]any{"rule_files": []any{"panels.yaml"}, "evaluation_interval": "1m", "tests": []any{map[string]any{
		"interval": "1m",
		"input_series": []any{
			series("startupgate-metrics", "10.0.0.1:8080", "up", "1x10"), series("startupgate-metrics", "10.0.0.2:8080", "up", "1x10"),
			series("startupgate-metrics", "10.0.0.1:8080", "leader_election_master_status", "0x10"),
			series("startupgate-metrics", "10.0.0.2:8080", "leader_election_master_status", "0x10"),
			series("other-operator-metrics", "10.0.1.1:8080", "up", "1x10"), series("other-operator-metrics", "10.0.1.2:8080", "up", "1x10"),
			series("other-operator-metrics", "10.0.1.3:8080", "up", "1x10"),
			series("other-operator-metrics", "10.0.1.1:8080", "leader_election_master_status", "1x10"),
		},
		"promql_expr_test": []any{
			map[string]any{"expr": "panel:replicas_up", "eval_time": "5m", "exp_samples": []any{map[string]any{"labels": "panel:replicas_up", "value": 2}}},
			map[string]any{"expr": "panel:leader", "eval_time": "5m", "exp_samples": []any{map[string]any{"labels": "panel:leader", "value": 0}}},
		},
	}}}
	for name, v := range map[string]any{"panels.yaml": rules, "panels.test.yaml": tests} {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := runPromtool(t, dir, "test", "rules", "panels.test.yaml"); err != nil {
		t.Errorf("the panels read other applications' targets with the default variables: %v\n%s", err, out)
	}
}

// defaultJob is the job variable's default value.
func defaultJob(t *testing.T, d map[string]any) string {
	t.Helper()
	vars, _, _ := unstructured.NestedSlice(d, "templating", "list")
	for _, v := range vars {
		if m := v.(map[string]any); m["name"] == "job" {
			if s, ok, _ := unstructured.NestedString(m, "current", "value"); ok {
				return s
			}
		}
	}
	t.Fatal("the job variable has no single default value")
	return ""
}

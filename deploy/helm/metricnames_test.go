package helm_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PromQL without a parser: the root module's test that reads metric-names.txt must not pull
// in Prometheus itself, and this module need not either. After strings, label matchers,
// ranges and grouping clauses are taken out, an identifier is a metric name unless it is a
// keyword or a function (followed by a parenthesis). TestMetricNamesIn pins the cases.
var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = []string{"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan", "Inf", "NaN"}
)

// metricNamesIn returns the metric names expr reads.
func metricNamesIn(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, "{}")
	e = promRanges.ReplaceAllString(e, "[]")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "0123456789.") {
			continue // a number's exponent or a duration's unit
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		if slices.Contains(promKeywords, id) {
			continue
		}
		out = append(out, id)
	}
	return out
}

func TestMetricNamesIn(t *testing.T) {
	for expr, want := range map[string][]string{
		`max by (rule) (startupgate_gated_nodes{job="a"}) > 0`:                                                             {"startupgate_gated_nodes"},
		`histogram_quantile(0.99, sum by (rule, le) (rate(x_bucket{job=~"$job", rule=~"$rule"}[$__rate_interval]))) > 1e3`: {"x_bucket"},
		`max(up{job="a"}) == 1 unless on () max(leader_election_master_status{job="a"}) == 1`:                              {"up", "leader_election_master_status"},
		`absent(up{job="a"} == 1)`: {"up"},
		`sum without (instance) (a offset 5m) / ignoring(code) group_left b`: {"a", "b"},
		`sum(increase(c_total{code!~"2..",x="by (y)"}[10m:1m]))`:             {"c_total"},
		`{__name__=~"startupgate_.*"}`:                                       nil,
	} {
		if diff := cmp.Diff(want, metricNamesIn(expr)); diff != "" {
			t.Errorf("metricNamesIn(%s) (-want +got):\n%s", expr, diff)
		}
	}
}

// TestMetricNamesFile: testdata/metric-names.txt lists exactly the metrics that the alerts
// and the dashboard read, for sim's TestMetricNamesExported to check against a running
// gate. Rewrite it with -update.
func TestMetricNamesFile(t *testing.T) {
	names := map[string]bool{}
	groups := ruleGroups(t, alertsOn, t.TempDir())
	for _, r := range alertRules(t, groups) {
		expr, _, _ := unstructured.NestedString(r, "expr")
		for _, n := range metricNamesIn(expr) {
			names[n] = true
		}
	}
	_, d := dashboardJSON(t, dashboardOn)
	for _, e := range dashboardExprs(d) {
		for _, n := range metricNamesIn(e) {
			names[n] = true
		}
	}
	var b strings.Builder
	b.WriteString("# The metrics the chart's alerts and dashboard read, one a line. Written by\n" +
		"#   cd deploy/helm && go test -run TestMetricNamesFile -update\n" +
		"# sim/metricnames_test.go checks each against a running gate's /metrics.\n")
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b.WriteString(n + "\n")
	}
	if *update {
		if err := os.WriteFile(metricNames, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(string(readFile(t, metricNames)), b.String()); diff != "" {
		t.Errorf("%s is stale; rewrite it with `go test -run TestMetricNamesFile -update` in deploy/helm (-file +chart):\n%s", metricNames, diff)
	}
}

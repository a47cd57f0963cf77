package helm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestOperatorValues: what an operator sets reaches the gate's Pods: an image by digest,
// pull secrets, Pod labels and annotations, the log level, more flags and environment (the
// large-cluster settings of docs/operations.md), and the Pods' affinity and spread; the
// schema refuses a flag without its dashes and a digest that is not one.
func TestOperatorValues(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	d := mustFind(t, renderChart(t, map[string]any{
		"image":                     map[string]any{"repository": "registry.example.com/startupgate", "tag": "", "digest": digest},
		"imagePullSecrets":          []any{map[string]any{"name": "regcred"}},
		"podLabels":                 map[string]any{"team": "platform"},
		"podAnnotations":            map[string]any{"example.com/owner": "platform"},
		"logLevel":                  "debug",
		"extraArgs":                 []any{"--workers=128", "--cache-sync-timeout=30m"},
		"env":                       []any{map[string]any{"name": "GOMEMLIMIT", "value": "900MiB"}},
		"affinity":                  map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"system"}}}}}}}},
		"topologySpreadConstraints": []any{map[string]any{"maxSkew": 2, "topologyKey": "example.com/rack", "whenUnsatisfiable": "DoNotSchedule"}},
	}, nil), "Deployment", "startupgate")
	raw, _ := json.Marshal(d.Object)
	for _, want := range []string{
		`"image":"registry.example.com/startupgate@` + digest + `"`, `"imagePullSecrets":[{"name":"regcred"}]`,
		`"team":"platform"`, `"example.com/owner":"platform"`, `"--log-level=debug"`, `"--workers=128"`, `"--cache-sync-timeout=30m"`,
		`{"name":"GOMEMLIMIT","value":"900MiB"}`, `"key":"pool"`, `"topologyKey":"example.com/rack"`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the Deployment lacks %s", want)
		}
	}
	if strings.Contains(string(raw), "topology.kubernetes.io/zone") {
		t.Error("the default spread is rendered beside the operator's own")
	}
	spread, _, _ := unstructured.NestedSlice(mustFind(t, renderChart(t, nil, nil), "Deployment", "startupgate").Object,
		"spec", "template", "spec", "topologySpreadConstraints")
	if len(spread) != 2 {
		t.Errorf("default spread: %d constraints, want one by node and one by zone", len(spread))
	}
	for _, bad := range []map[string]any{
		{"extraArgs": []any{"workers=128"}},
		{"image": map[string]any{"repository": "r", "tag": "", "digest": "latest"}},
		{"logLevel": "trace"},
	} {
		if _, err := renderFiles(t, bad, nil); err == nil {
			t.Errorf("values %v rendered; want the schema to refuse them", bad)
		}
	}
}

// TestUninstallReleasesNodes: helm uninstall first runs a pre-delete Job that releases every
// held node with the gate's own ServiceAccount and config; its Pod carries none of the
// gate's selector labels (no Service or PDB takes it for a gate replica); it can be turned
// off.
func TestUninstallReleasesNodes(t *testing.T) {
	objs := renderChart(t, nil, nil)
	job := mustFind(t, objs, "Job", "startupgate-release-nodes")
	if hook := job.GetAnnotations()["helm.sh/hook"]; hook != "pre-delete" {
		t.Errorf("the Job's hook is %q, want pre-delete", hook)
	}
	raw, _ := json.Marshal(job.Object)
	for _, want := range []string{`"args":["release","--all","--config=/etc/startupgate/config.yaml"]`, `"serviceAccountName":"startupgate"`,
		`"name":"` + configMap(t, objs).GetName() + `"`, `"key":"startup.k8s.io/initializing"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the Job lacks %s", want)
		}
	}
	labels, _, _ := unstructured.NestedStringMap(job.Object, "spec", "template", "metadata", "labels")
	if labels["app.kubernetes.io/name"] != "" || labels["app.kubernetes.io/instance"] != "" {
		t.Errorf("the Job's Pod carries the gate's selector labels %v", labels)
	}
	if find(renderChart(t, map[string]any{"uninstall": map[string]any{"releaseNodes": false}}, nil), "Job", "startupgate-release-nodes") != nil {
		t.Error("uninstall.releaseNodes false still renders the Job")
	}
}

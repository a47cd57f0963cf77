package helm_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestTolerationsFromConfig: the gate's Pods and the uninstall Job tolerate the taints the
// configured rules place (not the default key when config names another, not a condition
// rule's), and CriticalAddonsOnly, which system pools carry; NOTES names those taints.
func TestTolerationsFromConfig(t *testing.T) {
	rules := map[string]any{"rules": []any{
		map[string]any{"name": "default", "taint": map[string]any{"key": "example.com/warming", "value": "wait", "effect": "NoSchedule"},
			"components": []any{map[string]any{"name": "init", "selector": "app=init"}}},
		map[string]any{"name": "gpu", "nodeSelector": "gpu=true", "taint": map[string]any{"key": "example.com/gpu-warming", "effect": "NoSchedule"},
			"components": []any{map[string]any{"name": "driver", "selector": "app=driver"}}},
		map[string]any{"name": "oos", "mode": "condition", "taint": map[string]any{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"},
			"match": []any{map[string]any{"type": "Ready", "status": "False"}}},
	}}
	for _, c := range []struct {
		name   string
		config map[string]any
		want   []string // key:effect tolerated, CriticalAddonsOnly aside
		notes  []string
	}{
		{"default", nil, []string{"startup.k8s.io/initializing:NoSchedule"}, []string{"startup.k8s.io/initializing=wait:NoSchedule"}},
		{"top-level key", map[string]any{"taint": map[string]any{"key": "example.com/warming", "value": "x", "effect": "NoSchedule"}},
			[]string{"example.com/warming:NoSchedule"}, []string{"example.com/warming=x:NoSchedule"}},
		{"rules", rules, []string{"example.com/warming:NoSchedule", "example.com/gpu-warming:NoSchedule"},
			[]string{"example.com/warming=wait:NoSchedule", "example.com/gpu-warming=wait:NoSchedule"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := map[string]any{}
			if c.config != nil {
				vals["config"] = c.config
			}
			objs := renderChart(t, vals, nil)
			for _, o := range []*unstructured.Unstructured{mustFind(t, objs, "Deployment", "startupgate"), mustFind(t, objs, "Job", "startupgate-release-nodes")} {
				tols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "tolerations")
				var got []string
				critical := false
				for _, raw := range tols {
					tol := raw.(map[string]any)
					if tol["key"] == "CriticalAddonsOnly" {
						critical = tol["operator"] == "Exists"
						continue
					}
					got = append(got, tol["key"].(string)+":"+tol["effect"].(string))
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%s %s tolerates %v, want %v", o.GetKind(), o.GetName(), got, c.want)
				}
				if !critical {
					t.Errorf("%s %s does not tolerate CriticalAddonsOnly: %v", o.GetKind(), o.GetName(), tols)
				}
			}
			files, err := renderFiles(t, vals, nil)
			if err != nil {
				t.Fatal(err)
			}
			notes := files["startupgate/templates/NOTES.txt"]
			for _, want := range c.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("NOTES.txt does not name %s:\n%s", want, notes)
				}
			}
			if c.config != nil && strings.Contains(notes, "startup.k8s.io/initializing") {
				t.Errorf("NOTES.txt names the default taint, which this config does not place:\n%s", notes)
			}
		})
	}
}

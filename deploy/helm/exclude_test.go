package helm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/policy"
)

// TestExcludeRendersEverywhere: the chart's one exclude value, the default and each example
// of deploy/examples/exclude, is what the gate's config says, what the webhook's and the
// admission policy's objectSelector select (as the gate computes them from that config),
// and what the Deployment's affinity requires; a chart rendered with a non-AKS exclusion
// names nothing of AKS's anywhere.
func TestExcludeRendersEverywhere(t *testing.T) {
	cases := map[string][]metav1.LabelSelectorRequirement{"default": nil}
	files, err := filepath.Glob("../examples/exclude/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples %v (%v): want one for each of AKS, EKS, GKE, Karpenter and kubeadm", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.LoadConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		cases[strings.TrimSuffix(filepath.Base(f), ".yaml")] = cfg.Exclude
	}
	for name, exclude := range cases {
		t.Run(name, func(t *testing.T) {
			values := map[string]any{}
			if exclude != nil {
				values["exclude"] = toValues(t, exclude)
			}
			webhook := renderChart(t, values, nil)
			cfg := renderedConfig(t, webhook)
			want, err := policy.ObjectSelector(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			wh := mustFind(t, webhook, "MutatingWebhookConfiguration", "startupgate")
			hooks, _, _ := unstructured.NestedSlice(wh.Object, "webhooks")
			checkSelector(t, "the webhook's objectSelector", want, hooks[0].(map[string]any)["objectSelector"])
			rendered, _ := json.Marshal(hooks[0].(map[string]any)["objectSelector"])
			t.Logf("objectSelector: %s", rendered)
			withPolicy := map[string]any{"mode": "policy"}
			for k, v := range values {
				withPolicy[k] = v
			}
			pol := mustFind(t, renderChart(t, withPolicy, nil), "MutatingAdmissionPolicy", policy.Name)
			sel, _, _ := unstructured.NestedMap(pol.Object, "spec", "matchConstraints", "objectSelector")
			checkSelector(t, "the policy's objectSelector", want, sel)
			checkAffinity(t, cfg.Exclude, mustFind(t, webhook, "Deployment", "startupgate"), true)
			if name != "aks" && name != "default" {
				for _, o := range webhook {
					if raw, _ := json.Marshal(o.Object); strings.Contains(string(raw), "kubernetes.azure.com") {
						t.Errorf("%s names kubernetes.azure.com", key(o))
					}
				}
			}
		})
	}
}

// renderedConfig is the gate's config as the chart's ConfigMap holds it, validated.
func renderedConfig(t *testing.T, objs []*unstructured.Unstructured) config.Config {
	t.Helper()
	cm := configMap(t, objs)
	data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	cfg, err := config.LoadConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func toValues(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkSelector(t *testing.T, what string, want *metav1.LabelSelector, got any) {
	t.Helper()
	raw, _ := json.Marshal(got)
	var sel metav1.LabelSelector
	if err := yaml.Unmarshal(raw, &sel); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.MatchExpressions, sel.MatchExpressions, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s is not the config's (-config +chart):\n%s", what, diff)
	}
}

// checkAffinity: the Deployment's node affinity is one term per excluded requirement,
// required (the default, with failurePolicy Fail) or preferred.
func checkAffinity(t *testing.T, exclude []metav1.LabelSelectorRequirement, d *unstructured.Unstructured, required bool) {
	t.Helper()
	path := []string{"spec", "template", "spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"}
	term := []string{"preference", "matchExpressions"}
	if required {
		path[len(path)-1], term = "requiredDuringSchedulingIgnoredDuringExecution", []string{"matchExpressions"}
		path = append(path, "nodeSelectorTerms")
	}
	terms, _, _ := unstructured.NestedSlice(d.Object, path...)
	var got []metav1.LabelSelectorRequirement
	for _, tm := range terms {
		exprs, _, _ := unstructured.NestedSlice(tm.(map[string]any), term...)
		if len(exprs) != 1 {
			t.Errorf("a term of %d requirements, want one each (ORed, as exclude is): %v", len(exprs), exprs)
		}
		for _, e := range exprs {
			var r metav1.LabelSelectorRequirement
			raw, _ := json.Marshal(e)
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
	}
	if diff := cmp.Diff(exclude, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the Deployment's %s nodes are not the excluded ones (-exclude +affinity):\n%s", path[5], diff)
	}
}

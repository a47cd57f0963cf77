package helm_test

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPodGuardMatchConditions: what reaches the Pod guard. Only a Binding, or a Pod created
// bound that is not a mirror Pod, can land on a node without the scheduler, so on a cluster
// with matchConditions (1.28 and later) nothing else calls the webhook; before 1.28 the chart
// renders none, and the guard allows the rest itself. The rendered expression is evaluated
// with CEL, as the apiserver evaluates it, on each kind of request.
func TestPodGuardMatchConditions(t *testing.T) {
	vals := map[string]any{"podGuard": map[string]any{"enabled": true}}
	vwc := mustFind(t, renderChart(t, vals, nil), "ValidatingWebhookConfiguration", "startupgate-pod-guard")
	webhooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	conds, _, _ := unstructured.NestedSlice(webhooks[0].(map[string]any), "matchConditions")
	if len(conds) != 1 {
		t.Fatalf("the Pod guard renders %d matchConditions on 1.36, want 1", len(conds))
	}
	expr, _ := conds[0].(map[string]any)["expression"].(string)
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("compiling %q: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(nodeName string, annotations map[string]any) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": "c"}}}
		if nodeName != "" {
			spec["nodeName"] = nodeName
		}
		meta := map[string]any{"name": "p"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	}
	for _, c := range []struct {
		name    string
		kind    string
		object  map[string]any
		reaches bool
	}{
		{"a Pod created unbound (the scheduler binds it)", "Pod", pod("", nil), false},
		{"a Pod created bound", "Pod", pod("n1", nil), true},
		{"a Pod created bound, with annotations", "Pod", pod("n1", map[string]any{"a": "b"}), true},
		{"a mirror Pod", "Pod", pod("n1", map[string]any{"kubernetes.io/config.mirror": "x"}), false},
		{"a Binding (pods/binding, or the bindings resource)", "Binding", map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "p"},
			"target": map[string]any{"kind": "Node", "name": "n1"}}, true},
	} {
		out, _, err := prg.Eval(map[string]any{"object": c.object, "request": map[string]any{"operation": "CREATE", "kind": map[string]any{"group": "", "version": "v1", "kind": c.kind}}})
		if err != nil {
			t.Errorf("%s: evaluating: %v", c.name, err)
			continue
		}
		if got, _ := out.Value().(bool); got != c.reaches {
			t.Errorf("%s: reaches the guard %v, want %v", c.name, got, c.reaches)
		}
	}

	ch := loadChart(t)
	caps := *common.DefaultCapabilities
	caps.KubeVersion = common.KubeVersion{Version: "v1.27.9", Major: "1", Minor: "27"}
	top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true}, &caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatalf("rendering for 1.27: %v", err)
	}
	found := false
	for name, f := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, o := range decodeAll(t, name, f) {
			if o.GetKind() != "ValidatingWebhookConfiguration" {
				continue
			}
			found = true
			webhooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			if _, ok := webhooks[0].(map[string]any)["matchConditions"]; ok {
				t.Errorf("the chart renders matchConditions for 1.27, which has none")
			}
		}
	}
	if !found {
		t.Errorf("the chart renders no Pod guard for 1.27")
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidate: gate validate passes what a gate would start with and fails, naming the
// fault, what would crash-loop it, in each form a GitOps repository holds the config.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		want       string // "ok", or a piece of the error
	}{
		{"config.yaml", "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\nmaxHold: 5m\n", "ok"},
		{"typo.yaml", "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\nmaxHols: 5m\n", `unknown field "maxHols"`},
		{"bad-policy.yaml", "apiVersion: config.startupgate.io/v1alpha1\nkind: GateConfiguration\ntimeoutPolicy: later\n", "timeoutPolicy"},
		{"configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: startupgate-config}\ndata:\n  config.yaml: |\n    minHold: 10s\n", "ok"},
		{"configmap-typo.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: startupgate-config}\ndata:\n  config.yaml: |\n    minHodl: 10s\n", `unknown field "minHodl"`},
		{"configmap-nokey.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  other: a\n", "without data config.yaml"},
		{"values.yaml", "replicas: 2\nexclude: [{key: pool, operator: In, values: [system]}]\nconfig:\n  maxHold: 5m\n", "ok"},
		{"values-typo.yaml", "replicas: 2\nconfig:\n  rules:\n    - name: a\n      taint: {key: a/b, effect: NoSchedule}\n      componnets: []\n", `unknown field "rules[0].componnets"`},
		{"values-exclude.yaml", "config:\n  exclude: []\n", "set exclude at the top"},
		{"not-yaml.yaml", "a: [b\n", "not YAML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			err := runValidate([]string{path}, nil, &out, &errOut)
			line := strings.TrimSpace(out.String())
			if c.want == "ok" {
				if err != nil || line != path+": ok" {
					t.Errorf("validate %s: %v, printed %q, want ok", c.name, err, line)
				}
				return
			}
			if err == nil || !strings.Contains(line, c.want) || !strings.HasPrefix(line, path+": ") {
				t.Errorf("validate %s: %v, printed %q; want a failure naming %q", c.name, err, line, c.want)
			}
		})
	}
}

// TestValidateShippedConfigs: every config the project ships passes.
func TestValidateShippedConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/examples/exclude/*.yaml")
	files = append(files, "../../deploy/examples/rules.yaml", "../../deploy/base/config.yaml", "../../deploy/helm/startupgate/values.yaml")
	var out, errOut bytes.Buffer
	if err := runValidate(files, nil, &out, &errOut); err != nil {
		t.Errorf("%v:\n%s", err, out.String())
	}
}

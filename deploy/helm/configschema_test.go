package helm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
)

// schemaFile is the chart's values schema; its "config" property is generated from the Go
// types the gate decodes its config file into, so that helm install and upgrade refuse a
// field the gate would refuse at start (a typo would otherwise install, and crash-loop).
var schemaFile = filepath.Join(chartDir, "values.schema.json")

// TestConfigSchema: the schema's config property is the one configSchema makes from
// config.Config now (go test -run TestConfigSchema -update in deploy/helm rewrites it).
func TestConfigSchema(t *testing.T) {
	raw := readFile(t, schemaFile)
	start, end := configSpan(t, raw)
	want := configProperty(t)
	if string(raw[start:end]) == want {
		return
	}
	if !*update {
		t.Fatalf("%s: the config property is not the Go types' (gate/config changed?); rewrite it with `go test -run TestConfigSchema -update` in deploy/helm", schemaFile)
	}
	out := append(append(append([]byte{}, raw[:start]...), want...), raw[end:]...)
	if err := os.WriteFile(schemaFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConfigTypoRefused: a misspelled config field, at the top and inside a rule, fails the
// install with the field's name; the same config spelled right installs, and so do the
// example rules.
func TestConfigTypoRefused(t *testing.T) {
	rule := func(field string) map[string]any {
		return map[string]any{"rules": []any{map[string]any{"name": "cni", field: "5m",
			"taint":      map[string]any{"key": "example.com/cni", "effect": "NoSchedule"},
			"components": []any{map[string]any{"name": "cni", "selector": "app=cni"}}}}}
	}
	var example map[string]any // the realistic set of rules, as an operator passes it
	if err := yaml.Unmarshal(readFile(t, "../examples/rules.yaml"), &example); err != nil {
		t.Fatal(err)
	}
	delete(example, "exclude") // a value of its own in the chart
	for _, c := range []struct {
		name   string
		config map[string]any
		typo   string
	}{
		{"deploy/examples/rules.yaml", example, ""},
		{"top level", map[string]any{"maxHld": "5m"}, "maxHld"},
		{"in a rule", rule("maxHld"), "maxHld"},
		{"in a taint", map[string]any{"taint": map[string]any{"key": "example.com/w", "efect": "NoSchedule"}}, "efect"},
		{"spelled right", rule("maxHold"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderFiles(t, map[string]any{"config": c.config}, nil)
			switch {
			case c.typo == "" && err != nil:
				t.Fatalf("a valid config refused: %v", err)
			case c.typo != "" && (err == nil || !strings.Contains(err.Error(), c.typo)):
				t.Fatalf("config with %q: got %v, want a refusal that names it", c.typo, err)
			}
		})
	}
}

// configSpan is where the config property's value lies in the schema file.
func configSpan(t *testing.T, raw []byte) (int, int) {
	t.Helper()
	const prefix = "\n    \"config\": "
	i := bytes.Index(raw, []byte(prefix))
	if i < 0 {
		t.Fatalf("%s has no config property", schemaFile)
	}
	start := i + len(prefix)
	dec := json.NewDecoder(bytes.NewReader(raw[start:]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return start, start + int(dec.InputOffset())
}

// configProperty is config.Config's schema, indented as the file's properties are.
func configProperty(t *testing.T) string {
	t.Helper()
	s := configSchema(reflect.TypeFor[config.Config]())
	s["description"] = "The gate's config file (docs/reference/config.md), generated from gate/config's Go types: an unknown field is refused here, as the gate refuses it at start."
	raw, err := json.MarshalIndent(s, "    ", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// configSchema is a JSON schema of a type as sigs.k8s.io/yaml and the gate's strict decoder
// read it: objects name their fields and refuse others; what decodes itself (durations,
// times, int-or-string) is what it accepts.
func configSchema(ty reflect.Type) map[string]any {
	switch ty {
	case reflect.TypeFor[metav1.Duration](), reflect.TypeFor[metav1.Time]():
		return map[string]any{"type": "string"}
	case reflect.TypeFor[intstr.IntOrString]():
		return map[string]any{"type": []string{"integer", "string"}}
	}
	switch ty.Kind() {
	case reflect.Pointer:
		return configSchema(ty.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": configSchema(ty.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": configSchema(ty.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		structFields(ty, props)
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	return map[string]any{} // anything: the gate's own validation speaks for it
}

// structFields adds a struct's JSON fields, its embedded structs' inline.
func structFields(ty reflect.Type, props map[string]any) {
	for f := range ty.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			structFields(f.Type, props)
		case name == "":
			props[f.Name] = configSchema(f.Type)
		default:
			props[name] = configSchema(f.Type)
		}
	}
}

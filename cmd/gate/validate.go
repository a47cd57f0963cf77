package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/startupgate/startupgate/gate/config"
)

const validateUsage = `Usage: gate validate FILE...

Checks each file as the gate would read it at start, without a cluster, and exits non-zero
if any would not start a gate: for a GitOps pipeline, before a bad config rolls out and
crash-loops the new Pods. A FILE ("-" for stdin) is one of:
  a gate config (kind GateConfiguration, or unversioned, with a warning),
  a ConfigMap whose config.yaml is one (kustomize's configMapGenerator output, or a manifest),
  Helm values for deploy/helm/startupgate (its config, and exclude at the top).
Warnings go to stderr; the last line per file says ok or what is wrong.
`

// runValidate checks each file and reports per file; it fails if any file fails.
func runValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, validateUsage)
		if len(args) == 0 {
			return errors.New("validate: name at least one file")
		}
		return nil
	}
	failed := 0
	for _, path := range args {
		data, err := readInput(path, stdin)
		if err == nil {
			var warnings []string
			warnings, err = validateConfig(data)
			for _, w := range warnings {
				fmt.Fprintf(stderr, "%s: warning: %s\n", path, w)
			}
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s: %s\n", path, strings.ReplaceAll(err.Error(), "\n", "; "))
			continue
		}
		fmt.Fprintf(stdout, "%s: ok\n", path)
	}
	if failed > 0 {
		return fmt.Errorf("validate: %d of %d files would not start a gate", failed, len(args))
	}
	return nil
}

// validateConfig finds the gate config in data (itself, a ConfigMap's config.yaml, or Helm
// values' config) and loads and validates it as the gate does at start.
func validateConfig(data []byte) ([]string, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var warnings []string
	switch {
	case doc["kind"] == "ConfigMap":
		cm, _ := doc["data"].(map[string]any)
		inner, ok := cm["config.yaml"].(string)
		if !ok {
			return nil, errors.New("a ConfigMap without data config.yaml, which is the key the gate reads")
		}
		data = []byte(inner)
	case doc["kind"] == nil && doc["apiVersion"] == nil && isHelmValues(doc):
		var err error
		if data, err = helmConfig(doc); err != nil {
			return nil, err
		}
		warnings = append(warnings, "read as Helm values: their config, with exclude from the top level")
	}
	cfg, loadWarnings, err := config.Load(data)
	warnings = append(warnings, loadWarnings...)
	if err != nil {
		return warnings, err
	}
	if err := cfg.Validate(); err != nil {
		return warnings, fmt.Errorf("invalid config: %w", err)
	}
	return warnings, nil
}

// isHelmValues reports whether doc looks like the chart's values: a config key, or one of the
// chart's own top-level keys, none of the gate config's.
func isHelmValues(doc map[string]any) bool {
	for _, k := range []string{"config", "mode", "replicas", "image", "podGuard", "certificates", "failurePolicy"} {
		if _, ok := doc[k]; ok {
			return true
		}
	}
	return false
}

// helmConfig is the gate config the chart would render from these values: config, with
// the top-level exclude (the chart refuses config.exclude).
func helmConfig(doc map[string]any) ([]byte, error) {
	cfg, _ := doc["config"].(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	if _, ok := cfg["exclude"]; ok {
		return nil, errors.New("config.exclude: the chart refuses it; set exclude at the top of the values")
	}
	if ex, ok := doc["exclude"]; ok {
		cfg["exclude"] = ex
	}
	// The chart's ConfigMap names the version (templates/configmap.yaml).
	if _, ok := cfg["apiVersion"]; !ok {
		cfg["apiVersion"], cfg["kind"] = config.APIVersion, config.Kind
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(out), nil
}

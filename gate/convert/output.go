package convert

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/gate/rule"
)

// Output is a converted config: the rules, each with the comments said above it, and the
// comments said above them all (settings that are not rules).
type Output struct {
	Header []string
	Rules  []Rule
}

// Rule is one converted rule and what the conversion has to say about it.
type Rule struct {
	Comments []string
	Rule     rule.Rule
}

// outRule is the YAML form of the rule fields a conversion sets, in the order a reader
// wants them (rule.Rule marshals through JSON: alphabetical, with every zero duration).
type outRule struct {
	Name           string                      `yaml:"name"`
	Mode           rule.Mode                   `yaml:"mode"`
	DryRun         bool                        `yaml:"dryRun,omitempty"`
	NodeSelector   string                      `yaml:"nodeSelector,omitempty"`
	Taint          outTaint                    `yaml:"taint,flow"`
	Conditions     []rule.ConditionRequirement `yaml:"conditions,omitempty"`
	Match          []outMatch                  `yaml:"match,omitempty"`
	KeepAfterClear bool                        `yaml:"keepAfterClear,omitempty"`
}

type outTaint struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value,omitempty"`
	Effect string `yaml:"effect"`
}

type outMatch struct {
	Type   string `yaml:"type"`
	Status string `yaml:"status"`
}

func toOut(r *rule.Rule) outRule {
	o := outRule{Name: r.Name, Mode: r.Mode, DryRun: r.DryRun, NodeSelector: r.NodeSelector,
		Taint:      outTaint{Key: r.Taint.Key, Value: r.Taint.Value, Effect: string(r.Taint.Effect)},
		Conditions: r.Conditions, KeepAfterClear: r.KeepAfterClear}
	for _, m := range r.Match {
		o.Match = append(o.Match, outMatch{Type: string(m.Type), Status: m.Status})
	}
	return o
}

// YAML renders the config and checks it as `gate --config` would: decoded strictly, then
// validated. A conversion the gate would refuse fails here with the gate's own error.
func YAML(o *Output) ([]byte, error) {
	out, err := render(o)
	if err != nil {
		return nil, err
	}
	if err := Check(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Check decodes and validates a config exactly as `gate --config` does.
func Check(data []byte) error {
	cfg, err := config.LoadConfig(data)
	if err != nil {
		return fmt.Errorf("checking the converted config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("the gate refuses the converted config: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// render writes the versioned file, its `rules:` with a comment above each rule that has one. With no rules the
// gate would fall back to its default startup rule, so an empty conversion is an error.
func render(o *Output) ([]byte, error) {
	if len(o.Rules) == 0 {
		return nil, fmt.Errorf("nothing to convert: no rules")
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range o.Rules {
		item := &yaml.Node{}
		if err := item.Encode(toOut(&o.Rules[i].Rule)); err != nil {
			return nil, fmt.Errorf("encoding rule %q: %w", o.Rules[i].Rule.Name, err)
		}
		flowMatches(item)
		item.HeadComment = comment(o.Rules[i].Comments)
		seq.Content = append(seq.Content, item)
	}
	scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }
	version := scalar("apiVersion")
	version.HeadComment = comment(o.Header)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{
		version, scalar(config.APIVersion), scalar("kind"), scalar(config.Kind), scalar("rules"), seq}}}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding rules: %w", err)
	}
	return buf.Bytes(), nil
}

// flowMatches writes each match entry, and each condition with a default, on one line,
// {type: T, status: S}, as the example rules write a taint.
func flowMatches(rule *yaml.Node) {
	for i := 0; i+1 < len(rule.Content); i += 2 {
		if v := rule.Content[i].Value; v == "match" || v == "conditions" {
			for _, m := range rule.Content[i+1].Content {
				m.Style = yaml.FlowStyle
			}
		}
	}
}

func comment(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight("# "+l, " ")
	}
	return strings.Join(out, "\n")
}

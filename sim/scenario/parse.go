package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/startupgate/startupgate/gate/config"
)

// Load reads and validates one scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	sc.File = path
	return sc, nil
}

// Parse strictly decodes and validates a scenario. Errors start with "LINE: ".
func Parse(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	sc := &Scenario{doc: &yaml.Node{}}
	if err := dec.Decode(sc); err != nil {
		return nil, lineError(err)
	}
	if err := yaml.Unmarshal(data, sc.doc); err != nil { // for the lines of validation errors
		return nil, lineError(err)
	}
	if err := sc.defaultAndValidate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// LoadAll loads FILE or DIR arguments (a DIR contributes its *.yaml files, sorted).
func LoadAll(args []string) ([]*Scenario, error) {
	var out []*Scenario
	for _, arg := range args {
		files := []string{arg}
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(arg, "*.yaml"))
			sort.Strings(files)
		}
		for _, f := range files {
			sc, err := Load(f)
			if err != nil {
				return nil, err
			}
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenarios in %v", args)
	}
	return out, nil
}

// lineError turns yaml.v3's "yaml: line N: msg" into "N: msg" so callers can prefix a file.
func lineError(err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		return errors.New(rest)
	}
	return errors.New("1: " + msg)
}

// line is the line of the field at path (map keys and sequence indexes) in the scenario
// file, or of the deepest part of it the file has: a missing field is reported at its
// parent. A scenario built in Go has no file; its errors are at line 1.
func (sc *Scenario) line(path ...any) int {
	if sc.doc == nil || len(sc.doc.Content) == 0 {
		return 1
	}
	n := sc.doc.Content[0]
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			break
		}
		n = next
	}
	return n.Line
}

// child is the value under key p of a mapping node, or the p-th item of a sequence node.
func child(n *yaml.Node, p any) *yaml.Node {
	switch p := p.(type) {
	case string:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					return n.Content[i+1]
				}
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && p < len(n.Content) {
			return n.Content[p]
		}
	}
	return nil
}

// at is a validation error at a line of the scenario file.
func at(line int, format string, args ...any) error {
	return fmt.Errorf("%d: %s", line, fmt.Sprintf(format, args...))
}

// decodeGate applies the gate section to the contract's defaults, with the gate's own
// strict decoding and validation: a scenario cannot run a gate cmd/gate would refuse.
func (sc *Scenario) decodeGate() error {
	cfg := config.DefaultConfig()
	if sc.Gate.Kind != 0 {
		raw, err := yaml.Marshal(&sc.Gate)
		if err != nil {
			return at(sc.Gate.Line, "gate: %v", err)
		}
		if cfg, err = config.LoadConfig(raw); err != nil {
			return at(sc.Gate.Line, "gate: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return at(sc.Gate.Line, "gate: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	sc.GateConfig = cfg
	return nil
}

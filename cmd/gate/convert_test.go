package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/startupgate/startupgate/gate/config"
	"github.com/startupgate/startupgate/internal/golden"
)

// convertFixtures are one fixture per tool, written from its documented format, and the
// golden config each converts to.
var convertFixtures = []struct {
	from, input, golden string
	rules               int
}{
	{"tainter", "tainter/config.toml", "tainter/config.golden.yaml", 1},
	{"nrc", "nrc/rules.yaml", "nrc/rules.golden.yaml", 2},
}

func TestConvertGolden(t *testing.T) {
	for _, tc := range convertFixtures {
		t.Run(tc.from, func(t *testing.T) {
			var out, stderr bytes.Buffer
			if err := runConvert([]string{"--from", tc.from, golden.Path(tc.input)}, nil, &out, &stderr); err != nil {
				t.Fatalf("convert --from %s = %v", tc.from, err)
			}
			golden.Compare(t, tc.golden, out.Bytes())
		})
	}
}

// TestConvertGoldenAccepted feeds each golden config to the gate as `gate --config` does:
// the gate accepts what convert prints.
func TestConvertGoldenAccepted(t *testing.T) {
	for _, tc := range convertFixtures {
		t.Run(tc.from, func(t *testing.T) {
			data, err := os.ReadFile(golden.Path(tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.LoadConfig(data)
			if err != nil {
				t.Fatalf("LoadConfig(%s) = %v", tc.golden, err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate(%s) = %v", tc.golden, err)
			}
			if len(cfg.Rules) != tc.rules {
				t.Errorf("%s holds %d rules, want %d", tc.golden, len(cfg.Rules), tc.rules)
			}
			s, err := parse([]string{"--config", golden.Path(tc.golden)}, env(), &bytes.Buffer{})
			if err != nil {
				t.Fatalf("gate --config %s = %v", tc.golden, err)
			}
			if len(s.cfg.EffectiveRules()) != len(cfg.Rules) {
				t.Errorf("gate --config %s runs %d rules, want %d", tc.golden, len(s.cfg.EffectiveRules()), len(cfg.Rules))
			}
		})
	}
}

func TestConvertStdin(t *testing.T) {
	in, err := os.ReadFile(golden.Path("tainter", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var fromFile, fromStdin bytes.Buffer
	if err := runConvert([]string{"--from=tainter", golden.Path("tainter", "config.toml")}, nil, &fromFile, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := runConvert([]string{"--from=tainter", "-"}, bytes.NewReader(in), &fromStdin, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if fromFile.String() != fromStdin.String() {
		t.Errorf("stdin and file differ:\n%s\n---\n%s", fromStdin.String(), fromFile.String())
	}
}

func TestConvertErrors(t *testing.T) {
	toml := golden.Path("tainter", "config.toml")
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"no --from", []string{toml}, "", `convert: --from "": want tainter or nrc`},
		{"unknown tool", []string{"--from", "nidhogg", toml}, "", `--from "nidhogg"`},
		{"no file", []string{"--from", "tainter"}, "", "want one FILE (- for stdin), got 0"},
		{"two files", []string{"--from", "tainter", toml, toml}, "", "got 2"},
		{"missing file", []string{"--from", "tainter", "/nonexistent.toml"}, "", "convert: open /nonexistent.toml"},
		{"gate flag", []string{"--from", "tainter", "--config", "x", toml}, "", "unknown flag: --config"},
		{"wrong tool", []string{"--from", "nrc", toml}, "", "convert --from nrc " + toml},
		{"no equal", []string{"--from", "tainter", "-"}, "[[reconciler.matchers]]\n[reconciler.matchers.taint]\neffect = \"NoSchedule\"\nkey = \"a\"\nvalue = \"b\"\n[[reconciler.matchers.conditions]]\ntype = \"Net.*\"\nstatus = \"x\"\n",
			`convert --from tainter -: reconciler.matchers[0].conditions[0].type: "Net.*" is a regular expression`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runConvert(tc.args, strings.NewReader(tc.stdin), &out, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("runConvert(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("runConvert(%q) printed on failure:\n%s", tc.args, out.String())
			}
		})
	}
}

func TestConvertHelp(t *testing.T) {
	var stderr bytes.Buffer
	err := runConvert([]string{"--help"}, nil, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("convert --help = %v, want pflag.ErrHelp", err)
	}
	for _, want := range []string{"gate convert --from tainter|nrc FILE", "--from string", "- for", "gate --config rules.yaml"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage does not mention %q:\n%s", want, stderr.String())
		}
	}
	var main bytes.Buffer
	if _, err := parse([]string{"--help"}, env(), &main); !errors.Is(err, pflag.ErrHelp) || !strings.Contains(main.String(), "gate convert --from tainter|nrc FILE") {
		t.Errorf("gate --help does not list convert:\n%s", main.String())
	}
}

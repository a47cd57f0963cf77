package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/startupgate/startupgate/gate/convert"
)

// converters are the tools `gate convert --from` reads.
var converters = map[string]func([]byte) (*convert.Output, error){
	"tainter": convert.Tainter,
	"nrc":     convert.NRC,
}

// runConvert is `gate convert --from tainter|nrc FILE`: it prints the rules config that
// FILE (- for stdin) converts to, checked as `gate --config` would check it. It reads no
// cluster and takes none of the gate's own flags.
func runConvert(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("gate convert", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the tool FILE configures: tainter (its TOML settings) or nrc (NodeReadinessRule YAML)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), convertUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	conv, ok := converters[*from]
	if !ok {
		return fmt.Errorf("convert: --from %q: want tainter or nrc", *from)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("convert: want one FILE (- for stdin), got %d arguments", fs.NArg())
	}
	data, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	o, err := conv(data)
	if err != nil {
		return fmt.Errorf("convert --from %s %s: %w", *from, fs.Arg(0), err)
	}
	out, err := convert.YAML(o)
	if err != nil {
		return fmt.Errorf("convert --from %s %s: %w", *from, fs.Arg(0), err)
	}
	_, err = stdout.Write(out)
	return err
}

func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return data, nil
	}
	return os.ReadFile(path) // its error names the file
}

const convertUsage = `Usage: gate convert --from tainter|nrc FILE

Prints the gate's rules config equal to another tool's configuration in FILE (- for
stdin): tainter's TOML settings file, or node-readiness-controller's NodeReadinessRule
objects (YAML documents, or a List). A setting with no equal in a gate rule is an error
that names it; where the gate differs on purpose (an eviction budget, a settle time) a
comment above the rule says so. The output is checked as gate --config checks it.

  gate convert --from tainter tainter.toml > rules.yaml
  kubectl get nodereadinessrules -o yaml | gate convert --from nrc - > rules.yaml
  gate --config rules.yaml --print-policy

Flags:
`

package convert

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/startupgate/startupgate/gate/config"
)

// FuzzConvert feeds both converters arbitrary input: tainter's TOML when nrc is false,
// NodeReadinessRule YAML when it is true. `gate convert` promises an exact conversion or an
// error that names the setting, so the converter and the rendering either fail with a
// message or write a config that the gate loads back to the very rules converted
// (TestRenderRoundTrip's property): a comment that leaked into YAML, or a rule dropped on
// the way out, would break it.
func FuzzConvert(f *testing.F) {
	for _, s := range []struct {
		nrc  bool
		file string
	}{{false, "../../testdata/tainter/config.toml"}, {true, "../../testdata/nrc/rules.yaml"}} {
		data, err := os.ReadFile(s.file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.nrc, data)
	}
	f.Add(false, []byte(tainterMatcherTOML))
	f.Add(false, []byte("[server]\nhost = \"::\"\nport = 8080\n[log]\nmax_level = \"debug\"\n"+tainterMatcherTOML))
	f.Add(true, []byte(nrcRuleYAML))
	f.Add(true, []byte("apiVersion: v1\nkind: List\nitems:\n- "+strings.ReplaceAll(strings.TrimSpace(nrcRuleYAML), "\n", "\n  ")+"\n"))
	f.Fuzz(func(t *testing.T, nrc bool, data []byte) {
		convert := Tainter
		if nrc {
			convert = NRC
		}
		o, err := convert(data)
		if err == nil {
			var out []byte
			if out, err = YAML(o); err == nil {
				loadsBack(t, o, out)
				return
			}
		}
		if err.Error() == "" {
			t.Fatal("conversion failed with an empty message")
		}
	})
}

// loadsBack: the rendered config loads through config.LoadConfig to exactly the converted rules.
func loadsBack(t *testing.T, o *Output, out []byte) {
	t.Helper()
	cfg, err := config.LoadConfig(out)
	if err != nil {
		t.Fatalf("YAML() wrote a config that does not load: %v\n%s", err, out)
	}
	if diff := cmp.Diff(rules(o), cfg.Rules, ignoreCompiled); diff != "" {
		t.Fatalf("rules changed on the way out (-converted +loaded):\n%s\n%s", diff, out)
	}
}

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
// FuzzConvertTainter and FuzzConvertNRC feed each converter arbitrary input: it converts,
// and its output loads back to the same rules, or it fails with a message; it never panics.
// Each is its own target, so that make fuzz gives each input its own time.
func FuzzConvertTainter(f *testing.F) {
	seedFile(f, "../../testdata/tainter/config.toml")
	f.Add([]byte(tainterMatcherTOML))
	f.Add([]byte("[server]\nhost = \"::\"\nport = 8080\n[log]\nmax_level = \"debug\"\n" + tainterMatcherTOML))
	f.Fuzz(func(t *testing.T, data []byte) { convertsOrSays(t, Tainter, data) })
}

// FuzzConvertNRC: see FuzzConvertTainter.
func FuzzConvertNRC(f *testing.F) {
	seedFile(f, "../../testdata/nrc/rules.yaml")
	f.Add([]byte(nrcRuleYAML))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(nrcRuleYAML), "\n", "\n  ") + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) { convertsOrSays(t, NRC, data) })
}

func seedFile(f *testing.F, path string) {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
}

// convertsOrSays: the conversion's output loads back to the same rules, or it fails with a
// message.
func convertsOrSays(t *testing.T, convert func([]byte) (*Output, error), data []byte) {
	t.Helper()
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

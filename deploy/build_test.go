package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The Dockerfile and the Makefile build the gate the same way.

var makeVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// makefileGateBuild returns the `make build` recipe line that builds the gate, with Make
// variables expanded.
func makefileGateBuild(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	assign := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$`)
	var inBuild bool
	var line string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		l := sc.Text()
		if m := assign.FindStringSubmatch(l); m != nil {
			vars[m[1]] = strings.TrimSpace(m[2])
			continue
		}
		if !strings.HasPrefix(l, "\t") {
			inBuild = strings.HasPrefix(l, "build:")
			continue
		}
		if inBuild && strings.Contains(l, "./cmd/gate") {
			if line != "" {
				t.Fatalf("Makefile build target builds ./cmd/gate twice")
			}
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		t.Fatalf("no recipe line building ./cmd/gate in the Makefile's build target")
	}
	for i := 0; i < 5 && makeVar.MatchString(line); i++ {
		line = makeVar.ReplaceAllStringFunc(line, func(s string) string { return vars[makeVar.FindStringSubmatch(s)[1]] })
	}
	return shellWords(t, line)
}

type dockerfile struct {
	from       []string
	user       string
	entrypoint string
	buildLines [][]string
	shell      bool
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var df dockerfile
	// Join continuation lines.
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			df.from = append(df.from, strings.Fields(rest)[0])
		case "USER":
			df.user = rest
		case "ENTRYPOINT":
			df.entrypoint = rest
		case "SHELL":
			df.shell = true
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/gate") {
				df.buildLines = append(df.buildLines, shellWords(t, rest))
			}
		}
	}
	return df
}

// shellWords splits a command line the way sh would for the simple quoting these files use.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// withoutOutput replaces the value of -o (where the binary goes differs by design).
func withoutOutput(words []string) ([]string, string) {
	out := slices.Clone(words)
	for i := range out {
		if out[i] == "-o" && i+1 < len(out) {
			o := out[i+1]
			out[i+1] = "OUT"
			return out, o
		}
	}
	return out, ""
}

func TestDockerfileMatchesMakefile(t *testing.T) {
	mk := makefileGateBuild(t)
	df := parseDockerfile(t)
	if len(df.buildLines) != 1 {
		t.Fatalf("Dockerfile has %d RUN lines building ./cmd/gate, want 1", len(df.buildLines))
	}
	mkWords, mkOut := withoutOutput(mk)
	dfWords, dfOut := withoutOutput(df.buildLines[0])
	if diff := cmp.Diff(mkWords, dfWords); diff != "" {
		t.Errorf("Dockerfile and `make build` build the gate differently (-make +docker):\n%s", diff)
	}
	if filepath.Base(mkOut) != "gate" || filepath.Base(dfOut) != "gate" {
		t.Errorf("-o %q (make) and %q (docker): both must produce a binary named gate", mkOut, dfOut)
	}

	// The builder's Go is the go.mod's language version; the final image is distroless,
	// non-root, shell-less, and runs the binary the Deployment's command names.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	if len(df.from) != 2 || df.from[0] != "golang:"+string(m[1]) {
		t.Errorf("FROM %v: want golang:%s then the runtime image", df.from, m[1])
	}
	if len(df.from) == 2 && df.from[1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("runtime image = %q, want gcr.io/distroless/static-debian12:nonroot", df.from[1])
	}
	if df.shell {
		t.Errorf("Dockerfile sets a SHELL; the runtime image has none")
	}
	d := mustGet[appsv1.Deployment](t, render(t, "overlays/self-signed"), "Deployment", "startupgate")
	uid := *d.Spec.Template.Spec.SecurityContext.RunAsUser
	gid := *d.Spec.Template.Spec.SecurityContext.RunAsGroup
	if want := fmt.Sprintf("%d:%d", uid, gid); df.user != want {
		t.Errorf("USER %q, want %q (the Deployment's runAsUser:runAsGroup)", df.user, want)
	}
	cmdJSON, _ := yaml.YAMLToJSON([]byte(df.entrypoint))
	var entry []string
	if err := yaml.Unmarshal(cmdJSON, &entry); err != nil || !slices.Equal(entry, d.Spec.Template.Spec.Containers[0].Command) {
		t.Errorf("ENTRYPOINT %s (exec form required) != Deployment command %v", df.entrypoint, d.Spec.Template.Spec.Containers[0].Command)
	}
	if len(entry) == 0 || filepath.Base(dfOut) != strings.TrimPrefix(entry[0], "/") {
		t.Errorf("ENTRYPOINT %v does not run the built binary %s", entry, dfOut)
	}
}

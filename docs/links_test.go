package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// markdownFiles are the READMEs and every page under docs/, as paths from this directory.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "README.md")}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	fence    = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// prose is a Markdown file without its code blocks and code spans, where a bracket or a
// parenthesis is text, not a link.
func prose(text string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// TestLinks: every relative link in the README and docs/ leads to a file that exists, and
// an anchor to a heading of that file.
func TestLinks(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(prose(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p, anchor, _ := strings.Cut(target, "#")
			dest := file
			if p != "" {
				dest = filepath.Join(filepath.Dir(file), p)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %s does not exist", file, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if anchorsOf[dest] == nil {
				anchorsOf[dest] = headingAnchors(t, dest)
			}
			if !anchorsOf[dest][anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", file, target, dest, anchor)
			}
		}
	}
}

// TestPicturesLinked: every picture under docs/ is shown somewhere; one that nothing links
// to is dead weight in every clone.
func TestPicturesLinked(t *testing.T) {
	var all strings.Builder
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(prose(string(data)), -1) {
			abs, _ := filepath.Abs(filepath.Join(filepath.Dir(file), m[1]))
			fmt.Fprintln(&all, abs)
		}
	}
	pics, err := filepath.Glob("*.png")
	if err != nil {
		t.Fatal(err)
	}
	for _, pic := range pics {
		abs, _ := filepath.Abs(pic)
		if !strings.Contains(all.String(), abs+"\n") {
			t.Errorf("docs/%s: no page links to it", pic)
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings: lower case,
// punctuation dropped, spaces as dashes, a repeated anchor numbered -1, -2, ...
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		for i := 1; out[a]; i++ {
			a = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[a] = true
	}
	return out
}

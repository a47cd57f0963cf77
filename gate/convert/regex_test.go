package convert

import (
	"regexp"
	"strings"
	"testing"
)

func TestUnanchoredMeansWhatTainterSearched(t *testing.T) {
	tests := []struct {
		re    string
		in    []string // statuses tainter's search matches
		notIn []string
	}{
		{re: "Kaput|Ruined", in: []string{"Kaput", "Ruined", "NotKaput", "Kaputt", "x\nRuined"}, notIn: []string{"kaput", "", "Fine"}},
		{re: "severed", in: []string{"severed", "Unsevered"}, notIn: []string{"Severed"}},
		{re: "(?i)true", in: []string{"True", "TRUE", "untrue"}, notIn: []string{"False"}},
		{re: "^True$", in: []string{"True"}, notIn: []string{"NotTrue", "Truex"}},
		{re: "^(?:True|Unknown)", in: []string{"True", "Unknownish"}, notIn: []string{"IsTrue"}},
		{re: "[[:upper:]]x", in: []string{"aBx"}, notIn: []string{"abx"}},
		{re: "[]a]", in: []string{"]"}, notIn: []string{"b"}},
		{re: "", in: []string{"", "anything"}},
	}
	for _, tc := range tests {
		t.Run(tc.re, func(t *testing.T) {
			got, err := unanchored(tc.re)
			if err != nil {
				t.Fatalf("unanchored(%q) = %v", tc.re, err)
			}
			// The gate anchors a status regex to the whole value, as rule.compileMatch does.
			anchored := regexp.MustCompile(`^(?:` + got + `)$`)
			search := regexp.MustCompile(tc.re)
			for _, s := range append(tc.in, tc.notIn...) {
				if a, b := anchored.MatchString(s), search.MatchString(s); a != b {
					t.Errorf("%q on %q: anchored %v, search %v", got, s, a, b)
				}
			}
			for _, s := range tc.in {
				if !anchored.MatchString(s) {
					t.Errorf("%q does not match %q", got, s)
				}
			}
		})
	}
}

func TestUnanchoredRefusesWhatRustReadsOtherwise(t *testing.T) {
	tests := []struct{ re, want string }{
		{`\d+`, `\d is Unicode-aware in Rust`},
		{`[\w-]+`, `\w is Unicode-aware in Rust`},
		{`\bKaput\b`, `\b is Unicode-aware in Rust`},
		{`[a[bc]]`, "a class nested in a class"},
		{`[a-z&&b]`, "&& in a class is a set operation"},
		{`[a-z--b]`, "-- in a class is a set operation"},
		{`a{,3}`, "{,n} is a repetition in Rust"},
		{`(?x) a b`, "Go's regexp does not read it"},
		{`foo(bar`, "Go's regexp does not read it"},
	}
	for _, tc := range tests {
		t.Run(tc.re, func(t *testing.T) {
			_, err := unanchored(tc.re)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("unanchored(%q) = %v, want an error containing %q", tc.re, err, tc.want)
			}
		})
	}
}

func TestUnanchoredKeepsEscapes(t *testing.T) {
	// An escaped backslash or bracket is not a Perl class or a nested class.
	for _, re := range []string{`\\d`, `\[\[x`, `[\[]`, `a\{,3}`} {
		if _, err := unanchored(re); err != nil {
			t.Errorf("unanchored(%q) = %v", re, err)
		}
	}
}

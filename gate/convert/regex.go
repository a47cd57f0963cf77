package convert

import (
	"fmt"
	"regexp"
	"strings"
)

// unanchored rewrites a regular expression that tainter matches anywhere in a value (Rust's
// is_match) into one the gate matches against the whole value, meaning the same: any
// prefix, the expression, any suffix. (?s:.*) also spans a newline, as a search does.
//
// Rust's regex crate and Go's RE2 share their syntax but for a few forms that parse in both
// and mean different things, or that Go reads as literal text; those are errors, never a
// guess.
func unanchored(re string) (string, error) {
	if err := rustOnly(re); err != nil {
		return "", err
	}
	if _, err := regexp.Compile(re); err != nil {
		return "", fmt.Errorf("%q: Go's regexp does not read it: %w", re, err)
	}
	return `(?s:.*)(?:` + re + `)(?s:.*)`, nil
}

// rustOnly reports the first form whose meaning differs between Rust and Go: the Perl
// classes and word boundaries (Unicode-aware in Rust, ASCII in Go), classes nested in a
// class and class set operations (&&, --, ~~), and a repetition without a minimum ({,n}).
func rustOnly(re string) error {
	inClass := false
	for i := 0; i < len(re); i++ {
		c, next := re[i], byte(0)
		if i+1 < len(re) {
			next = re[i+1]
		}
		switch {
		case c == '\\':
			if strings.IndexByte(`dDwWsSbB`, next) >= 0 {
				return fmt.Errorf("%q: \\%c is Unicode-aware in Rust and ASCII-only in Go; write the class out, e.g. [0-9]", re, next)
			}
			i++
		case inClass && c == '[' && next == ':': // [[:alpha:]] means the same in both
			if end := strings.Index(re[i:], ":]"); end > 0 {
				i += end + 1
			}
		case inClass && c == '[':
			return fmt.Errorf("%q: a class nested in a class is a set in Rust and literal text in Go", re)
		case inClass && strings.IndexByte("&-~", c) >= 0 && next == c:
			return fmt.Errorf("%q: %c%c in a class is a set operation in Rust and literal text in Go", re, c, c)
		case inClass && c == ']':
			inClass = false
		case !inClass && c == '[':
			inClass = true
			i += classStart(re[i+1:])
		case !inClass && c == '{' && next == ',':
			return fmt.Errorf("%q: {,n} is a repetition in Rust and literal text in Go; write {0,n}", re)
		}
	}
	return nil
}

// classStart is how many bytes after '[' still open the class: a '^', then a ']' that is a
// literal because it comes first.
func classStart(s string) int {
	n := 0
	if strings.HasPrefix(s, "^") {
		n++
	}
	if strings.HasPrefix(s[n:], "]") {
		n++
	}
	return n
}

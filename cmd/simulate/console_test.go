package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/startupgate/startupgate/internal/golden" // every test binary knows -update
	"github.com/startupgate/startupgate/sim/report"
)

// play feeds a console two scenarios: a runs 25 s and settles, b starts at 5 s and times
// out at 40 s; each reports progress every second, as the runner does. at15, if set, runs
// after the progress of second 15.
func play(c *console, clock *time.Time, at15 func()) {
	start := *clock
	for s := 0; s <= 40; s++ {
		if s == 16 && at15 != nil {
			at15()
		}
		*clock = start.Add(time.Duration(s) * time.Second)
		if s == 12 {
			fmt.Fprintln(c, "a line from elsewhere")
		}
		if s <= 25 {
			p := report.Progress{Scenario: "a", Seed: 1, Elapsed: time.Duration(s) * time.Second, Nodes: 10, Joined: 10, Gated: 10, Released: min(10, s/2)}
			switch s {
			case 0:
				p.Phase = report.Started
			case 25:
				p.Phase = report.Settled
			}
			c.Progress(p)
		}
		if s >= 5 {
			p := report.Progress{Scenario: "b", Seed: 1, Elapsed: time.Duration(s-5) * time.Second, Nodes: 4, Joined: 4, Gated: 4, Early: 1}
			switch s {
			case 5:
				p.Phase = report.Started
			case 40:
				p.Phase = report.TimedOut
			}
			c.Progress(p)
		}
	}
}

// TestConsolePipe: when stdout is no terminal, a line per scenario when it starts and when
// it ends, and at most one progress line every 10 s — never a line per scenario per second.
func TestConsolePipe(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &console{out: &out, now: func() time.Time { return clock }, width: func() int { return 100 }}
	play(c, &clock, nil)
	c.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"  start   a                                    10 nodes",
		"  start   b                                    4 nodes",
		"a line from elsewhere",
		"  ...     a 22.0s released 10/10; b 16.0s released 0/4, early pods 1",
		"  done    a                                      25.0s  joined 10  released 10/10",
		"  ...     b 30.0s released 0/4, early pods 1",
		"  timeout b                                      35.0s  joined 4  released 0/4, early pods 1",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("console output:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("escape sequences on a console that is not a terminal")
	}
}

// TestConsoleTerminal: on a terminal, the live lines are redrawn in place; what remains on
// screen is the other lines, one line per scenario that ended, and nothing once closed.
func TestConsoleTerminal(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &console{out: &out, tty: true, now: func() time.Time { return clock }, width: func() int { return 60 }}
	var mid []string
	play(c, &clock, func() { mid = screen(t, out.String()) })
	c.Close()
	got := screen(t, out.String())
	want := []string{
		"a line from elsewhere",
		"  done    a                                      25.0s  joined 10  released 10/10",
		"  timeout b                                      35.0s  joined 4  released 0/4, early pods 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("screen after close:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantMid := []string{
		"a line from elsewhere",
		"  a  15.0s  joined 10/10  released 7 [#######...]  early po", // cut at the terminal's width
		"  b  10.0s  joined 4/4  released 0 [..........]  early pods",
	}
	if strings.Join(mid, "\n") != strings.Join(wantMid, "\n") {
		t.Errorf("screen at 15 s:\n%s\nwant:\n%s", strings.Join(mid, "\n"), strings.Join(wantMid, "\n"))
	}
}

var escape = regexp.MustCompile(`^\x1b\[(\d*)([AJ])`)

// screen replays what a terminal would show: text, newlines, carriage returns, cursor up
// (ESC[nA) and erase to the end of the screen (ESC[J).
func screen(t *testing.T, s string) []string {
	t.Helper()
	var lines []string
	row := 0
	for len(s) > 0 {
		if m := escape.FindStringSubmatch(s); m != nil {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "A":
				row -= n
				if row < 0 {
					t.Fatalf("cursor moved above the first line")
				}
			case "J":
				lines = lines[:min(row, len(lines))]
			}
			s = s[len(m[0]):]
			continue
		}
		switch s[0] {
		case '\r':
		case '\n':
			row++
		default:
			for len(lines) <= row {
				lines = append(lines, "")
			}
			lines[row] += s[:1]
		}
		s = s[1:]
	}
	return lines
}

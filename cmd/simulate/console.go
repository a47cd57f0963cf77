package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/startupgate/startupgate/sim/report"
)

// console is what simulate prints while scenarios run. Scenario progress reaches it as
// data (it is a report.ProgressReceiver), and any other line through Write.
//
//   - On a terminal it keeps one live line per running scenario at the bottom, redrawn in
//     place, and leaves one line behind for each scenario that ends.
//   - Anywhere else (CI, `| tee`) it prints a line when a scenario starts and one when it
//     ends, and at most one progress line every pipeEvery, for all running scenarios.
type console struct {
	mu  sync.Mutex
	out io.Writer
	tty bool
	// width is the terminal's width (tty only): a live line must not wrap, or redrawing
	// in place would move up too few lines.
	width func() int
	now   func() time.Time

	running []report.Progress // the latest of each running scenario, in start order
	drawn   int               // live lines on screen (tty)
	last    time.Time         // when the last line was printed (pipe)
}

// pipeEvery is how often, at most, a console that is not a terminal prints progress.
const pipeEvery = 10 * time.Second

// newConsole writes to out, live if out is a terminal.
func newConsole(out io.Writer) *console {
	c := &console{out: out, now: time.Now, width: func() int { return 100 }}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.tty = true
		c.width = func() int {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
				return w
			}
			return 100
		}
	}
	return c
}

// Write prints p (whole lines) above the live lines.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	n, err := c.out.Write(p)
	c.last = c.now()
	c.draw()
	return n, err
}

// Progress takes one scenario's progress.
func (c *console) Progress(p report.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.index(p)
	switch {
	case p.Phase.Done():
		if i >= 0 {
			c.running = append(c.running[:i], c.running[i+1:]...)
		}
		c.clear()
		c.line(endLine(p))
		c.draw()
	case i < 0:
		c.running = append(c.running, p)
		if c.tty {
			c.clear()
			c.draw()
			return
		}
		c.line(startLine(p))
	default:
		c.running[i] = p
		if c.tty {
			c.clear()
			c.draw()
			return
		}
		if c.now().Sub(c.last) >= pipeEvery {
			c.line(c.summary())
		}
	}
}

// Close removes the live lines, before the final table is printed.
func (c *console) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	c.running = nil
}

func (c *console) index(p report.Progress) int {
	for i, r := range c.running {
		if r.Scenario == p.Scenario && r.Seed == p.Seed {
			return i
		}
	}
	return -1
}

// line prints one lasting line.
func (c *console) line(s string) {
	fmt.Fprintln(c.out, s)
	c.last = c.now()
}

// clear erases the live lines (tty): up to the first of them, and to the end of the screen.
func (c *console) clear() {
	if c.tty && c.drawn > 0 {
		fmt.Fprintf(c.out, "\x1b[%dA\r\x1b[J", c.drawn)
	}
	c.drawn = 0
}

// draw prints the live lines (tty).
func (c *console) draw() {
	if !c.tty {
		return
	}
	w := c.width() - 1
	nameW := 0
	for _, p := range c.running {
		nameW = max(nameW, len(p.Scenario))
	}
	var sb strings.Builder
	for _, p := range c.running {
		sb.WriteString(truncate(liveLine(p, nameW), w))
		sb.WriteByte('\n')
	}
	fmt.Fprint(c.out, sb.String())
	c.drawn = len(c.running)
}

// summary is the pipe's periodic line: every running scenario, briefly.
func (c *console) summary() string {
	parts := make([]string, 0, len(c.running))
	for _, p := range c.running {
		parts = append(parts, fmt.Sprintf("%s %s released %d/%d%s", p.Scenario, secs(p.Elapsed), p.Released, p.Nodes, earlyNote(p)))
	}
	return "  ...     " + strings.Join(parts, "; ")
}

func startLine(p report.Progress) string {
	return fmt.Sprintf("  %-7s %-36s %d nodes", "start", p.Scenario, p.Nodes)
}

func endLine(p report.Progress) string {
	word := "done"
	if p.Phase == report.TimedOut {
		word = "timeout"
	}
	return fmt.Sprintf("  %-7s %-36s %7s  joined %d  released %d/%d%s%s", word, p.Scenario, secs(p.Elapsed),
		p.Joined, p.Released, p.Gated, earlyNote(p), refusedNote(p))
}

// liveLine: name, elapsed, joined, released with a bar, early Pods.
func liveLine(p report.Progress, nameW int) string {
	return fmt.Sprintf("  %-*s %6s  joined %d/%d  released %d %s  early pods %d%s", nameW, p.Scenario, secs(p.Elapsed),
		p.Joined, p.Nodes, p.Released, bar(p.Released, p.Nodes, 10), p.Early, refusedNote(p))
}

// bar draws done out of total in width cells.
func bar(done, total, width int) string {
	full := 0
	if total > 0 {
		full = min(width, done*width/total)
	}
	return "[" + strings.Repeat("#", full) + strings.Repeat(".", width-full) + "]"
}

func earlyNote(p report.Progress) string {
	if p.Early == 0 {
		return ""
	}
	return fmt.Sprintf(", early pods %d", p.Early)
}

func refusedNote(p report.Progress) string {
	if p.Refused == 0 {
		return ""
	}
	return fmt.Sprintf("  registrations refused %d", p.Refused)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func truncate(s string, w int) string {
	if r := []rune(s); len(r) > w {
		return string(r[:w])
	}
	return s
}

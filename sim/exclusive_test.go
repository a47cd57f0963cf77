package sim

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// The runs that cannot share a plane (scenarios that restart its apiserver or run its
// controller-manager with other flags, bursts large enough that the one scheduler's queue is
// what the others would measure, and their negative controls) run one after another in a
// child process of this test binary, on a plane of its own, while this process runs the rest
// on the shared plane. Run in series before everything else, they would hold the package
// for a long time spent mostly waiting out their windows, with the machine half idle.
//
// A process, not a second plane in this one: a second plane in the same process breaks
// apiserver-restart (its client connections are force-closed). A process shares no
// client-go state with this one, as each run of `simulate` does.

// exclusiveChildEnv marks the child process that runs TestExclusive's runs.
const exclusiveChildEnv = "STARTUPGATE_SIM_EXCLUSIVE_CHILD"

// inExclusiveChild: this process is that child.
var inExclusiveChild = os.Getenv(exclusiveChildEnv) != ""

// exclusiveChild is the child process, started by TestMain when -run selects TestExclusive,
// so that it runs from the start beside the other tests (TestExclusive itself, being
// parallel, only starts when every other test has finished).
var exclusiveChild atomic.Pointer[childTest]

// childTest is this test binary running TestExclusive in a process of its own.
type childTest struct {
	out  bytes.Buffer // its stdout and stderr; read only after done
	err  error        // its exit; set before done closes
	done chan struct{}
}

// startExclusiveChild runs TestExclusive in a child process, with run (childPattern's) as
// its -test.run. The child gets SIGKILL if this process dies, and its planes with it.
func startExclusiveChild(run string) *childTest {
	c := &childTest{done: make(chan struct{})}
	args := []string{"-test.run=" + run, "-test.v"}
	for _, name := range []string{"test.timeout", "test.skip", "test.failfast"} {
		if f := flag.Lookup(name); f != nil {
			args = append(args, "-"+name+"="+f.Value.String())
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), exclusiveChildEnv+"=1")
	cmd.Stdout, cmd.Stderr = &c.out, &c.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.err = err
		close(c.done)
		return c
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c
}

// startExclusiveChildIfRun starts the child from TestMain when the -test.run pattern selects
// TestExclusive and no -test.skip is given. Otherwise TestExclusive starts it itself, late,
// if it runs at all.
func startExclusiveChildIfRun() {
	if inExclusiveChild {
		return
	}
	run, skip := flag.Lookup("test.run"), flag.Lookup("test.skip")
	if run == nil || skip != nil && skip.Value.String() != "" {
		return
	}
	if pattern, ok := childPattern(run.Value.String()); ok {
		exclusiveChild.Store(startExclusiveChild(pattern))
	}
}

// childPattern is the child's -test.run for the parent's run: of each alternative that
// selects TestExclusive (the testing package splits a pattern at its top-level bars, then
// each alternative at its slashes, by level), TestExclusive with that alternative's
// subtest part. ok is false when no alternative selects TestExclusive.
func childPattern(run string) (pattern string, ok bool) {
	var alts []string
	for _, alt := range splitTop(run, '|') {
		levels := splitTop(alt, '/')
		if m, err := regexp.MatchString(levels[0], "TestExclusive"); err != nil || !m {
			continue
		}
		alts = append(alts, strings.Join(append([]string{"^TestExclusive$"}, levels[1:]...), "/"))
	}
	return strings.Join(alts, "|"), len(alts) > 0
}

// splitTop splits p at each sep outside brackets and parentheses (and not escaped).
func splitTop(p string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, p[start:])
}

// TestExclusive runs every scenario that cannot share a plane, and every negative control
// of a scenario that changes its plane, one after another on a plane of their own. In the
// test process it waits for the child that runs them, and fails with it.
func TestExclusive(t *testing.T) {
	if !inExclusiveChild {
		t.Parallel()
		c := exclusiveChild.Swap(nil) // taken once: with -count, each later run starts its own
		if c == nil {
			c = startExclusiveChild("^TestExclusive$")
		}
		<-c.done
		t.Log("the child process (its own plane):\n| " + strings.ReplaceAll(strings.TrimRight(c.out.String(), "\n"), "\n", "\n| "))
		if c.err != nil {
			t.Fatalf("TestExclusive's child process: %v", c.err)
		}
		return
	}
	r, scs := suite(t)
	for _, sc := range scs {
		if sc.Exclusive() {
			t.Run("scenario/"+sc.Name, func(t *testing.T) { runPassing(t, r, sc) })
		}
	}
	for _, nc := range negativeControls {
		if changesPlane(loadScenario(t, nc.file)) {
			t.Run("control/"+nc.name(), func(t *testing.T) { nc.caught(t, sharedPlane(t)) })
		}
	}
}

// TestChildPattern: the child runs what -run selected under TestExclusive, and only that.
func TestChildPattern(t *testing.T) {
	for _, tt := range []struct {
		run, want string
		ok        bool
	}{
		{"", "^TestExclusive$", true},
		{"TestExclusive", "^TestExclusive$", true},
		{"Test", "^TestExclusive$", true},
		{"TestScenarios", "", false},
		{"TestScenarios/basic-join", "", false},
		{"TestExclusive/scenario/apiserver-restart", "^TestExclusive$/scenario/apiserver-restart", true},
		{"TestExclusive/scenario/apiserver-restart|TestScenarios/basic-join$", "^TestExclusive$/scenario/apiserver-restart", true},
		{"TestScenarios|TestExclusive/control", "^TestExclusive$/control", true},
		{"Test(Exclusive|Scenarios)/x|y", "^TestExclusive$/x", true},
		{"Test(Exclusive|Scenarios)/x|Excl", "^TestExclusive$/x|^TestExclusive$", true},
		{"Test[/|]X|TestExclusive/a", "^TestExclusive$/a", true},
		{`Test\|X|TestExclusive`, "^TestExclusive$", true},
	} {
		if got, ok := childPattern(tt.run); got != tt.want || ok != tt.ok {
			t.Errorf("childPattern(%q) = %q, %v; want %q, %v", tt.run, got, ok, tt.want, tt.ok)
		}
	}
}

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

	"github.com/startupgate/startupgate/sim/scenario"
)

// The runs that cannot share a plane run one after another in a child process of this test
// binary, on a plane of their own, while this process runs the rest on the shared plane.
// There are two such children, each a top-level test:
//   - TestExclusive: scenarios that restart the apiserver or run its controller-manager with
//     other flags, bursts large enough that the one scheduler's queue is what the others would
//     measure, and the negative controls of scenarios that change their plane;
//   - TestAutoscaler: the scenarios and controls that run Karpenter. One Karpenter acts on
//     every NodePool and pending Pod of its plane, so they cannot share one with each other,
//     but they need no other run's absence, and spend most of their time waiting out warm-ups.
//
// Run in series before everything else, they would hold the package for a long time spent
// mostly waiting out their windows, with the machine half idle.
//
// A process, not a second plane in this one: a second plane in the same process breaks
// apiserver-restart (its client connections are force-closed). A process shares no
// client-go state with this one, as each run of `simulate` does.

// childEnv names, in a child process, the top-level test it runs.
const childEnv = "STARTUPGATE_SIM_CHILD"

// inChild: this process is one of the children.
var inChild = os.Getenv(childEnv) != ""

// childTests are the top-level tests that run in a child, each with the child TestMain
// started for it, if it did. The map is never written after init.
var childTests = map[string]*atomic.Pointer[childTest]{
	"TestExclusive":  {},
	"TestAutoscaler": {},
}

// childTest is this test binary running one top-level test in a process of its own.
type childTest struct {
	out  bytes.Buffer // its stdout and stderr; read only after done
	err  error        // its exit; set before done closes
	done chan struct{}
}

// startChild runs test in a child process, with run (childPattern's) as its -test.run. The
// child gets SIGKILL if this process dies, and its planes with it.
func startChild(test, run string) *childTest {
	c := &childTest{done: make(chan struct{})}
	args := []string{"-test.run=" + run, "-test.v"}
	for _, name := range []string{"test.timeout", "test.skip", "test.failfast"} {
		if f := flag.Lookup(name); f != nil {
			args = append(args, "-"+name+"="+f.Value.String())
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+test)
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

// startChildrenIfRun starts, from TestMain, a child for each child test that the -test.run
// pattern selects, when no -test.skip is given, so that they run from the start beside the
// other tests (a parallel top-level test only starts when every other has finished).
// Otherwise the child test starts its child itself, late, if it runs at all.
func startChildrenIfRun() {
	if inChild {
		return
	}
	run, skip := flag.Lookup("test.run"), flag.Lookup("test.skip")
	if run == nil || skip != nil && skip.Value.String() != "" {
		return
	}
	for test, slot := range childTests {
		if pattern, ok := childPattern(run.Value.String(), test); ok {
			slot.Store(startChild(test, pattern))
		}
	}
}

// childPattern is the child's -test.run for the parent's run: of each alternative that
// selects test (the testing package splits a pattern at its top-level bars, then each
// alternative at its slashes, by level), test with that alternative's subtest part. ok is
// false when no alternative selects test.
func childPattern(run, test string) (pattern string, ok bool) {
	var alts []string
	for _, alt := range splitTop(run, '|') {
		levels := splitTop(alt, '/')
		if m, err := regexp.MatchString(levels[0], test); err != nil || !m {
			continue
		}
		alts = append(alts, strings.Join(append([]string{"^" + test + "$"}, levels[1:]...), "/"))
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

// inParent runs the parent's side of a child test: it waits for the child (starting it if
// TestMain did not), logs its output, and fails with it. It reports whether this process is
// the parent, in which case the test has nothing more to do.
func inParent(t *testing.T) bool {
	t.Helper()
	if inChild {
		return false
	}
	t.Parallel()
	c := childTests[t.Name()].Swap(nil) // taken once: with -count, each later run starts its own
	if c == nil {
		c = startChild(t.Name(), "^"+t.Name()+"$")
	}
	<-c.done
	t.Log("the child process (its own plane):\n| " + strings.ReplaceAll(strings.TrimRight(c.out.String(), "\n"), "\n", "\n| "))
	if c.err != nil {
		t.Fatalf("%s's child process: %v", t.Name(), c.err)
	}
	return true
}

// TestExclusive runs every scenario that cannot share a plane, and every negative control
// of a scenario that changes its plane, one after another on a plane of their own; those
// that run an autoscaler are TestAutoscaler's. In the test process it waits for the child
// that runs them, and fails with it.
func TestExclusive(t *testing.T) {
	if !inParent(t) {
		runInSeries(t, func(sc *scenario.Scenario) bool { return sc.Exclusive() && sc.Autoscaler == nil })
	}
}

// TestAutoscaler runs every scenario that runs an autoscaler, and their negative controls,
// one after another on a plane of their own, beside TestExclusive's.
func TestAutoscaler(t *testing.T) {
	if !inParent(t) {
		runInSeries(t, func(sc *scenario.Scenario) bool { return sc.Autoscaler != nil })
	}
}

// runInSeries runs, one after another on this process's plane, the scenarios that take
// selects, and the negative controls of those among them that change their plane.
func runInSeries(t *testing.T, takes func(*scenario.Scenario) bool) {
	t.Helper()
	r, scs := suite(t)
	for _, sc := range scs {
		if takes(sc) {
			t.Run("scenario/"+sc.Name, func(t *testing.T) { runPassing(t, r, sc) })
		}
	}
	for _, nc := range negativeControls {
		if sc := load(t, nc.file); changesPlane(sc) && takes(sc) {
			t.Run("control/"+nc.name(), func(t *testing.T) { nc.caught(t, sharedPlane(t)) })
		}
	}
}

// TestChildPattern: a child runs what -run selected under its test, and only that.
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
		{"TestAutoscaler", "", false},
		{"TestExclusive/scenario/apiserver-restart", "^TestExclusive$/scenario/apiserver-restart", true},
		{"TestExclusive/scenario/apiserver-restart|TestScenarios/basic-join$", "^TestExclusive$/scenario/apiserver-restart", true},
		{"TestScenarios|TestExclusive/control", "^TestExclusive$/control", true},
		{"Test(Exclusive|Scenarios)/x|y", "^TestExclusive$/x", true},
		{"Test(Exclusive|Scenarios)/x|Excl", "^TestExclusive$/x|^TestExclusive$", true},
		{"Test[/|]X|TestExclusive/a", "^TestExclusive$/a", true},
		{`Test\|X|TestExclusive`, "^TestExclusive$", true},
	} {
		if got, ok := childPattern(tt.run, "TestExclusive"); got != tt.want || ok != tt.ok {
			t.Errorf("childPattern(%q) = %q, %v; want %q, %v", tt.run, got, ok, tt.want, tt.ok)
		}
	}
}

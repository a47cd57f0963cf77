package sim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/startupgate/startupgate/sim/gateundertest"
	"github.com/startupgate/startupgate/sim/scenario"
)

// The runs that cannot share a plane (scenarios that restart its apiserver or run its
// controller-manager with other flags, bursts large enough that the one scheduler's queue is
// what the others would measure, and their negative controls) run one after another in a
// child process of this test binary, on a plane of its own, while this process runs the rest
// on the shared plane. On one plane they ran in series before everything else, about half
// of the package's time and most of it waiting out their windows, and a cold CI run ended
// with this package alone on a machine a third idle.
//
// A process, not a second plane in this one: with two planes in one process, apiserver-
// restart failed on the second ("http2: client connection force closed"), for a reason not
// found. A process shares no client-go state with this one, as each run of `simulate` does.

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

// startExclusiveChild runs TestExclusive (the subtests that sub selects, all if empty) in a
// child process. The child gets SIGKILL if this process dies, and its planes with it.
func startExclusiveChild(sub string) *childTest {
	c := &childTest{done: make(chan struct{})}
	run := "^TestExclusive$"
	if sub != "" {
		run += "/" + sub
	}
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
	top, sub := splitTestPattern(run.Value.String())
	if ok, err := regexp.MatchString(top, "TestExclusive"); err != nil || !ok {
		return
	}
	exclusiveChild.Store(startExclusiveChild(sub))
}

// splitTestPattern splits a -test.run pattern at its first slash outside brackets and
// parentheses, as the testing package splits it by level: the top-level test's pattern and
// its subtests'.
func splitTestPattern(p string) (top, sub string) {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				return p[:i], p[i+1:]
			}
		}
	}
	return p, ""
}

// TestExclusive runs every scenario that cannot share a plane, and every negative control
// of a scenario that changes its plane, one after another on a plane of their own. In the
// test process it waits for the child that runs them, and fails with it.
func TestExclusive(t *testing.T) {
	if !inExclusiveChild {
		t.Parallel()
		c := exclusiveChild.Swap(nil) // taken once: with -count, each later run starts its own
		if c == nil {
			c = startExclusiveChild("")
		}
		<-c.done
		t.Log("the child process (its own plane):\n| " + strings.ReplaceAll(strings.TrimRight(c.out.String(), "\n"), "\n", "\n| "))
		if c.err != nil {
			t.Fatalf("TestExclusive's child process: %v", c.err)
		}
		return
	}
	rc := sharedPlane(t)
	scs, err := scenario.LoadAll([]string{"../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(rc, Options{Gate: gateundertest.InProcess, Plane: plane})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		if sc.Exclusive() {
			t.Run("scenario/"+sc.Name, func(t *testing.T) {
				res, err := r.Run(context.Background(), sc)
				if err != nil {
					t.Fatal(err)
				}
				assertPassed(t, res)
			})
		}
	}
	for _, nc := range negativeControls {
		if changesPlane(t, nc.file) {
			t.Run("control/"+nc.name(), func(t *testing.T) { nc.caught(t, rc) })
		}
	}
}

// TestSplitTestPattern: the child runs what -run selected under TestExclusive.
func TestSplitTestPattern(t *testing.T) {
	for _, tt := range []struct{ in, top, sub string }{
		{"", "", ""},
		{"TestExclusive", "TestExclusive", ""},
		{"TestExclusive/scenario/apiserver-restart", "TestExclusive", "scenario/apiserver-restart"},
		{"Test(A|B/C)/x", "Test(A|B/C)", "x"},
		{"Test[/]X/y", "Test[/]X", "y"},
		{`Test\/X/y`, `Test\/X`, "y"},
	} {
		if top, sub := splitTestPattern(tt.in); top != tt.top || sub != tt.sub {
			t.Errorf("splitTestPattern(%q) = %q, %q; want %q, %q", tt.in, top, sub, tt.top, tt.sub)
		}
	}
}

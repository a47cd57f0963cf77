package controlplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// planeChildEnv makes the test binary a process that starts a plane, prints the pids of its
// children, and waits to be killed.
const planeChildEnv = "STARTUPGATE_TEST_PLANE_CHILD"

// TestPlaneDiesWithItsParent: when the process that started a plane is killed outright (a
// run killed halfway), every process of the plane goes with it. make exports
// $KUBEBUILDER_ASSETS, which envtest prefers to the binaries it is given, so the child is
// started with it set. A killed child cannot remove its plane's directories (etcd's data is
// over 100 MB), so its $TMPDIR is the test's own, which the test removes.
func TestPlaneDiesWithItsParent(t *testing.T) {
	if os.Getenv(planeChildEnv) != "" {
		runPlaneChild()
		return
	}
	bin, err := BinaryDir()
	if err != nil {
		t.Fatal(err) // make test-unit skips this test by name (PLANE_TESTS)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPlaneDiesWithItsParent$")
	cmd.Env = append(os.Environ(), planeChildEnv+"=1", "KUBEBUILDER_ASSETS="+bin, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "children:"); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			break
		}
	}
	if len(pids) < 4 {
		t.Fatalf("the child's plane has %d processes (%v), want etcd, the apiserver, the scheduler and the controller-manager", len(pids), pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("%s (pid %d) outlived the process that started it", comm(pid), pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// runPlaneChild starts a plane, prints its processes' pids, and waits to be killed.
func runPlaneChild() {
	e := &Embedded{}
	if _, err := e.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("children:%s\n", childrenOf(os.Getpid()))
	select {}
}

// childrenOf lists the pids whose parent is ppid.
func childrenOf(ppid int) string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out strings.Builder
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read after its last ')'.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			fmt.Fprintf(&out, " %s", filepath.Base(filepath.Dir(p)))
		}
	}
	return out.String()
}

// alive: the pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return false
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// comm is the process's command name.
func comm(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(raw))
}

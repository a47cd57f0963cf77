package controlplane

import (
	"os/exec"
	"testing"
)

// TestChildProcessLongName: a child whose name is longer than the kernel keeps (15 bytes,
// as kube-controller-manager is) is still found by its full name.
func TestChildProcessLongName(t *testing.T) {
	dir := t.TempDir()
	bin := dir + "/sleeper-with-a-long-name"
	if out, err := exec.Command("cp", "/bin/sleep", bin).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid, argv, err := childProcess("sleeper-with-a-long-name")
	if err != nil || pid != cmd.Process.Pid || len(argv) == 0 {
		t.Errorf("childProcess = %d, %v, %v; want pid %d", pid, argv, err, cmd.Process.Pid)
	}
}

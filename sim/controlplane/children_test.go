package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestWrappersPassEnv: the wrapper envtest starts for etcd and kube-apiserver runs the real
// binary with the plane's Env (envtest has no way to pass one) and the arguments it was
// given, quoting intact.
func TestWrappersPassEnv(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		stub := "#!/bin/sh\necho \"$GOGC|$ETCD_QUOTA_BACKEND_BYTES|$*\"\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &Embedded{dir: t.TempDir(), Env: []string{"GOGC=50", "ETCD_QUOTA_BACKEND_BYTES=it's 8"}}
	dir, err := e.wrappers(bin)
	if err != nil {
		t.Fatal(err)
	}
	if dir == bin {
		t.Fatal("wrappers ran the real binaries unwrapped, without Env")
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		out, err := exec.Command(filepath.Join(dir, name), "--a", "b c").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		if got, want := strings.TrimSpace(string(out)), "50|it's 8|--a b c"; got != want {
			t.Errorf("%s wrapper printed %q, want %q", name, got, want)
		}
	}
}

package node

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitedQuotesLog: a part that dies at start says why in its own log, and the error that
// reports its exit carries that log's last lines, as they are all a CI run's output keeps.
func TestExitedQuotesLog(t *testing.T) {
	dir := t.TempDir()
	p, log, err := spawn(dir, "kubelet", "/bin/sh", dir, "-c", `echo starting; echo 'E1127 server.go:1] "Failed to listen and serve" err="bind: address already in use"'; exit 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	<-p.done
	got := p.exited(dir)
	if got == nil {
		t.Fatal("an exited part reads as running")
	}
	if ee := (*exec.ExitError)(nil); !errors.As(got, &ee) || ee.ExitCode() != 1 {
		t.Errorf("the exit error does not wrap the exit status 1: %v", got)
	}
	for _, want := range []string{"kubelet exited (exit status 1)", filepath.Join(dir, "kubelet.log"), "\tstarting\n", "address already in use"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("the exit error lacks %q:\n%v", want, got)
		}
	}
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long := strings.Repeat("x", 20<<10) + "\nnext to last\nlast\n"
	for _, tc := range []struct {
		name, path string
		n          int
		want       string
	}{
		{"fewer lines than asked", write("short", "a\nb\n"), 8, "\ta\n\tb"},
		{"the last n", write("many", "1\n2\n3\n4\n"), 2, "\t3\n\t4"},
		{"no newline at the end", write("open", "1\n2"), 1, "\t2"},
		{"a large log's cut first line is dropped", write("long", long), 8, "\tnext to last\n\tlast"},
		{"empty", write("empty", ""), 8, "\t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := logTail(tc.path, tc.n); got != tc.want {
				t.Errorf("logTail = %q, want %q", got, tc.want)
			}
		})
	}
	if got := logTail(filepath.Join(dir, "missing"), 8); !strings.Contains(got, "no such file") {
		t.Errorf("a missing log: %q", got)
	}
}

package gateundertest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// A child's lines reach the simulator's log whole, in order, under the run and replica,
// however the pipe splits them: a JSON line as an object (greppable by its fields), any
// other line as a string, and a last line cut off without a newline too.
func TestChildLog(t *testing.T) {
	var out bytes.Buffer
	c := &childLog{log: zap.New(zap.WriteTo(&out)).WithValues("run", "leader-failover seed 17", "replica", 1)}
	in := `{"level":"info","msg":"successfully acquired lease","lease":"ns/startupgate"}` + "\n" +
		"panic: something\n\n" +
		`{"level":"error","msg":"cut`
	for _, chunk := range []string{in[:10], in[10:70], in[70:]} { // writes split mid-line
		if _, err := c.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("want 3 lines logged, got %d:\n%s", len(got), out.String())
	}
	for _, m := range got {
		if m["run"] != "leader-failover seed 17" || m["replica"] != float64(1) || m["msg"] != "gate process" {
			t.Errorf("line without its run and replica: %v", m)
		}
	}
	if child, ok := got[0]["child"].(map[string]any); !ok || child["msg"] != "successfully acquired lease" {
		t.Errorf("a JSON line must be kept as an object, got %#v", got[0]["child"])
	}
	if got[1]["child"] != "panic: something" {
		t.Errorf("plain line: got %#v", got[1]["child"])
	}
	if got[2]["child"] != `{"level":"error","msg":"cut` {
		t.Errorf("the unterminated last line: got %#v", got[2]["child"])
	}
}

// A line longer than maxLine (a child that never writes a newline) is logged in pieces as
// it comes, not held in memory whole.
func TestChildLogLongLine(t *testing.T) {
	var out bytes.Buffer
	c := &childLog{log: zap.New(zap.WriteTo(&out))}
	long := strings.Repeat("x", 2*maxLine+10)
	if _, err := c.Write([]byte(long)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d lines logged before the end, want 2 pieces of %d bytes", n, maxLine)
	}
	if len(c.buf) != 10 {
		t.Errorf("%d bytes held, want the 10 left over", len(c.buf))
	}
	_ = c.Close()
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("%d lines logged in all, want 3", n)
	}
}

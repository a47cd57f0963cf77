package jsonlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Every line is written, however many share a message (controller-runtime's logger kept
// 100 a second of them), as JSON with a millisecond time; V(1) lines are not.
func TestNewWritesEveryLine(t *testing.T) {
	var out bytes.Buffer
	log := New(&out).WithValues("run", "r")
	for i := 0; i < 1000; i++ {
		log.Info("gate process", "i", i)
	}
	log.V(1).Info("debug")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1000 {
		t.Fatalf("%d lines written, want 1000", len(lines))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[999]), &m); err != nil {
		t.Fatal(err)
	}
	if m["msg"] != "gate process" || m["i"] != float64(999) || m["run"] != "r" || m["level"] != "info" {
		t.Errorf("last line: %v", m)
	}
	if ts, _ := m["ts"].(string); len(ts) != len("2026-11-24T21:28:03.123Z") {
		t.Errorf("ts %q: want a millisecond time", m["ts"])
	}
}

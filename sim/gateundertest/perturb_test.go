package gateundertest

import (
	"io"
	"testing"
	"time"
)

// TestDelayLine: a watch body's chunks come out in order, each held at least the delay while
// the window is on; closing it ends a read that waits.
func TestDelayLine(t *testing.T) {
	pr, pw := io.Pipe()
	on := true
	window := make(chan bool, 1)
	window <- true
	d := newDelayLine(pr, func() (time.Duration, bool) {
		select {
		case on = <-window:
		default:
		}
		return 200 * time.Millisecond, on
	})
	read := func() (string, time.Duration) {
		t.Helper()
		start := time.Now()
		b := make([]byte, 16)
		n, err := d.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n]), time.Since(start)
	}
	go func() { _, _ = pw.Write([]byte("first")) }()
	if got, took := read(); got != "first" || took < 150*time.Millisecond {
		t.Errorf("in the window: read %q after %s, want \"first\" after the 200ms delay", got, took)
	}
	window <- false
	go func() { _, _ = pw.Write([]byte("second")) }()
	if got, _ := read(); got != "second" {
		t.Errorf("after the window: read %q, want \"second\"", got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Read(make([]byte, 16))
		done <- err
	}()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a read after Close returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting read did not end when the body was closed")
	}
}

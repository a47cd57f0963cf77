package gateundertest

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/go-logr/logr"
)

// childLog is a child process's stdout and stderr, passed line by line to the simulator's
// log (--gate-log) under the run and replica that wrote it. A soak's process replicas used
// to log into the run's temporary directory, removed with the run, and a takeover that
// failed there left no trace of what the standby saw. A JSON line (the gate logs JSON) is
// kept as an object under "child"; any other line as a string.
type childLog struct {
	log logr.Logger
	mu  sync.Mutex
	buf []byte
}

// maxLine is the longest line kept whole; a longer one is logged in pieces of this size.
const maxLine = 64 << 10

// Write logs every complete line in p and keeps the rest for the next call.
func (c *childLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		switch {
		case i < 0 && len(c.buf) < maxLine:
			return len(p), nil
		case i < 0 || i > maxLine:
			i = maxLine
			c.emit(c.buf[:i])
			c.buf = c.buf[i:]
		default:
			c.emit(c.buf[:i])
			c.buf = c.buf[i+1:]
		}
	}
}

// Close logs a last line that had no newline (a child killed mid-write).
func (c *childLog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.emit(c.buf)
	c.buf = nil
	return nil
}

func (c *childLog) emit(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if json.Valid(line) && line[0] == '{' {
		c.log.Info("gate process", "child", json.RawMessage(bytes.Clone(line)))
		return
	}
	c.log.Info("gate process", "child", string(line))
}

package gateundertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The perturbations the explorer (sim/explore) makes of what an in-process gate does and
// sees, after Sieve (OSDI '22): a crash just before or just after one of its Node writes,
// and watches that deliver late. They act in the gate's own client (gateRC), so they touch
// nothing else on the plane.

// crashPoint is a crash armed at the gate's k-th Node write attempt, or, with match, at
// the left-th from now whose body holds match.
type crashPoint struct {
	k            int64
	match        string
	left         atomic.Int64
	after        bool
	restartAfter time.Duration
}

// fires reports whether the n-th write attempt, req, is the crash point's.
func (cp *crashPoint) fires(n int64, req *http.Request) bool {
	if cp.match == "" {
		return cp.k == n
	}
	return bodyHolds(req, cp.match) && cp.left.Add(-1) == 0
}

// bodyHolds reports whether the request's body holds s, reading a copy of it (GetBody,
// which client-go's requests have) or else the body itself, put back for the send.
func bodyHolds(req *http.Request, s string) bool {
	var b []byte
	switch {
	case req.GetBody != nil:
		rc, err := req.GetBody()
		if err != nil {
			return false
		}
		b, _ = io.ReadAll(rc)
		_ = rc.Close()
	case req.Body != nil:
		b, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	return bytes.Contains(b, []byte(s))
}

// errCrashed is what the k-th write gets when the gate is killed before it: the write
// never reaches the apiserver.
var errCrashed = errors.New("gate killed before this write (crash point)")

// CrashAtWrite arms a crash at the gate's k-th Node write attempt from now (k >= 1), or,
// with match, at the k-th from now whose body holds match (an annotation key, say): every
// replica is killed just before the write leaves (the write is lost) or just after its
// answer (after), and started again restartAfter later. In-process gates only.
func (h *Harness) CrashAtWrite(k int, after bool, restartAfter time.Duration, match string) error {
	if h.process || h.floor || h.off || h.installed {
		return fmt.Errorf("crash points need an in-process gate")
	}
	cp := &crashPoint{k: h.writeAttempts.Load() + int64(k), match: match, after: after, restartAfter: restartAfter}
	cp.left.Store(int64(k))
	h.crash.Store(cp)
	return nil
}

// WriteAttempts is how many Node writes the in-process gate has sent so far.
func (h *Harness) WriteAttempts() int64 { return h.writeAttempts.Load() }

// crashed kills every replica and starts it again after the crash point's delay. It runs on
// its own goroutine: the write that fires it runs inside a replica's reconcile, which the
// kill waits for.
func (h *Harness) crashed(cp *crashPoint) {
	from := time.Now()
	defer func() { h.down.add(from, time.Now()) }()
	for _, r := range h.replicas {
		_ = h.kill(r) // killed on purpose: a crash's own stop error is no failure of the run
	}
	select {
	case <-h.ctx.Done():
		return
	case <-time.After(cp.restartAfter):
	}
	// A Reconfigure (an edit of the rules) in between has started the replicas already, with
	// the config now in force: they are not started twice.
	h.reconfMu.Lock()
	defer h.reconfMu.Unlock()
	for _, r := range h.replicas {
		r.mu.Lock()
		down := r.killed && r.cancel == nil && r.cmd == nil
		r.mu.Unlock()
		if !down {
			continue
		}
		if err := h.Run(h.ctx, r); err != nil {
			r.mu.Lock()
			r.restartErr = errors.Join(r.restartErr, fmt.Errorf("restarting after a crash point: %w", err))
			r.mu.Unlock()
		}
	}
}

// Down is a window in which the gate was down: from the kill of every replica, at a crash
// point or for an edit of the rules (Reconfigure), to the end of their restart.
type Down struct{ From, To time.Time }

// downWindows are the windows in which the gate was down.
type downWindows struct {
	mu sync.Mutex
	w  []Down
}

func (d *downWindows) add(from, to time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w = append(d.w, Down{From: from, To: to})
}

// DownWindows are the windows in which every replica was down: a crash point's, and an
// edit's restart of the replicas.
func (h *Harness) DownWindows() []Down {
	h.down.mu.Lock()
	defer h.down.mu.Unlock()
	return slices.Clone(h.down.w)
}

// DelayWatches makes the gate's watches of resource ("nodes" or "pods") deliver every event
// that arrives in the next window delay late, in order, as a watch behind a slow apiserver or
// a congested connection does: the gate decides on a stale view meanwhile. In-process gates
// only.
func (h *Harness) DelayWatches(resource string, delay, window time.Duration) error {
	if h.process || h.floor || h.off || h.installed {
		return fmt.Errorf("watch delays need an in-process gate")
	}
	h.delays.Store(resource, delayWindow{until: time.Now().Add(window), delay: delay})
	return nil
}

// delayWindow: events that arrive before until are delivered delay late.
type delayWindow struct {
	until time.Time
	delay time.Duration
}

// perturbing is the gate client's transport: it counts Node writes (NodeWrites) and makes
// the armed perturbations.
type perturbing struct {
	next http.RoundTripper
	h    *Harness
}

// RoundTrip passes req on, counting a successful Node write, firing an armed crash point,
// and delaying a watch's body in a delay window.
func (p *perturbing) RoundTrip(req *http.Request) (*http.Response, error) {
	h := p.h
	write := (req.Method == http.MethodPatch || req.Method == http.MethodPut) && strings.HasPrefix(req.URL.Path, "/api/v1/nodes/")
	var cp *crashPoint
	if write {
		n := h.writeAttempts.Add(1)
		if armed := h.crash.Load(); armed != nil && armed.fires(n, req) && h.crash.CompareAndSwap(armed, nil) {
			cp = armed
		}
	}
	if cp != nil && !cp.after {
		go h.crashed(cp)
		return nil, errCrashed
	}
	resp, err := p.next.RoundTrip(req)
	if err == nil && write && resp.StatusCode < 300 {
		h.nodeWrites.Add(1)
		h.byNode.count(req.URL.Path[len("/api/v1/nodes/"):])
	}
	if cp != nil {
		go h.crashed(cp)
	}
	// Every watch of Nodes or Pods goes through a delay line: a window set while the watch
	// is open must reach it.
	if resource := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]; err == nil && req.URL.Query().Get("watch") == "true" &&
		(resource == "nodes" || resource == "pods") {
		resp.Body = newDelayLine(resp.Body, func() (time.Duration, bool) {
			v, ok := h.delays.Load(resource)
			if !ok {
				return 0, false
			}
			w := v.(delayWindow)
			return w.delay, time.Now().Before(w.until)
		})
	}
	return resp, err
}

// delayLine is a watch body that hands each chunk on delay after it arrived, while the
// window lasts, in order.
type delayLine struct {
	body   io.ReadCloser
	chunks chan chunk
	buf    []byte
	err    error
	once   sync.Once
	done   chan struct{}
}

type chunk struct {
	data []byte
	at   time.Time
	err  error
}

func newDelayLine(body io.ReadCloser, window func() (time.Duration, bool)) *delayLine {
	d := &delayLine{body: body, chunks: make(chan chunk, 64), done: make(chan struct{})}
	go func() {
		defer close(d.chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := body.Read(b)
			at := time.Now()
			if delay, on := window(); on {
				at = at.Add(delay)
			}
			if n > 0 || err != nil {
				select {
				case d.chunks <- chunk{data: b[:n], at: at, err: err}:
				case <-d.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return d
}

// Read hands on the next chunk once its time has come.
func (d *delayLine) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		var c chunk
		select {
		case got, ok := <-d.chunks:
			if !ok {
				return 0, io.EOF
			}
			c = got
		case <-d.done:
			return 0, io.ErrClosedPipe
		}
		select {
		case <-time.After(time.Until(c.at)):
		case <-d.done:
			return 0, io.ErrClosedPipe
		}
		d.buf, d.err = c.data, c.err
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

// Close closes the watch body.
func (d *delayLine) Close() error {
	var err error
	d.once.Do(func() {
		close(d.done)
		err = d.body.Close()
	})
	return err
}

// setContext keeps the context a harness started under, for the restarts of crash points.
func (h *Harness) setContext(ctx context.Context) { h.ctx = ctx }

// nodeCounts counts the gate's accepted writes per Node.
type nodeCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *nodeCounts) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

// MostWrittenNode is the Node the in-process gate wrote most often, and how often ("", 0:
// none, or a process gate).
func (h *Harness) MostWrittenNode() (string, int) {
	h.byNode.mu.Lock()
	defer h.byNode.mu.Unlock()
	name, most := "", 0
	for n, c := range h.byNode.n {
		if c > most || c == most && n < name {
			name, most = n, c
		}
	}
	return name, most
}

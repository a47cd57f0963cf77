package controlplane

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Relay is a TCP relay between the apiserver and the gate's webhook server(s). It carries
// TLS untouched (the apiserver still verifies the gate's certificate) and is where webhook
// faults are injected: refuse connections, hang them, or delay them. With several backends
// (gate replicas) it spreads connections across the ones that accept, like a Service does.
type Relay struct {
	ln       net.Listener
	backends atomic.Pointer[[]string]
	mode     atomic.Value // RelayMode
	latency  atomic.Int64 // nanoseconds added before relaying
	next     atomic.Uint64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

// RelayMode is what a Relay does with connections.
type RelayMode string

// The modes a Relay can be set to, from healthy to the two ways a webhook backend fails.
const (
	RelayPass   RelayMode = "pass"   // relay untouched
	RelayRefuse RelayMode = "refuse" // close at once: a connection refused / reset
	RelayHang   RelayMode = "hang"   // accept and never answer: the apiserver times out
)

// NewRelay listens on a free loopback port and relays to backends.
func NewRelay(backends ...string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Relay{ln: ln, conns: map[net.Conn]struct{}{}}
	p.SetBackends(backends...)
	p.mode.Store(RelayPass)
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the relay's host:port.
func (p *Relay) Addr() string { return p.ln.Addr().String() }

// SetBackends replaces the addresses connections are relayed to.
func (p *Relay) SetBackends(b ...string) { p.backends.Store(&b) }

// SetMode switches the fault. Entering an outage also cuts the open connections: the
// apiserver keeps its connections to a webhook alive, and an outage that spared them would
// be no outage.
func (p *Relay) SetMode(m RelayMode) {
	p.mode.Store(m)
	if m != RelayPass {
		p.CutAll()
	}
}

// SetLatency delays every new connection by d before it is relayed.
func (p *Relay) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

func (p *Relay) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c, true)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			p.handle(c)
		}()
	}
}

func (p *Relay) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Relay) handle(c net.Conn) {
	switch p.mode.Load().(RelayMode) {
	case RelayRefuse:
		return
	case RelayHang:
		_, _ = io.Copy(io.Discard, c) // until the client gives up or we close
		return
	}
	if d := time.Duration(p.latency.Load()); d > 0 {
		time.Sleep(d) // the injected fault itself: this is the slow webhook
	}
	up, err := p.dial()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// dial tries the backends round-robin, skipping ones that refuse (a killed replica).
func (p *Relay) dial() (net.Conn, error) {
	bs := *p.backends.Load()
	start := p.next.Add(1)
	last := errors.New("no backends")
	for i := range bs {
		b := bs[(int(start)+i)%len(bs)]
		c, err := net.DialTimeout("tcp", b, time.Second)
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// CutAll closes every open connection, as a network blip or an apiserver ending its
// watches would. It returns how many it cut.
func (p *Relay) CutAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	return len(p.conns)
}

// Close stops listening and cuts every connection, waiting for its goroutines until ctx ends.
func (p *Relay) Close(ctx context.Context) {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

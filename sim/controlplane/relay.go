package sim

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy is a TCP relay between the apiserver and the gate's webhook server(s). It carries
// TLS untouched (the apiserver still verifies the gate's certificate) and is where webhook
// faults are injected: refuse connections, hang them, or delay them. With several backends
// (gate replicas) it spreads connections across the ones that accept, like a Service does.
type proxy struct {
	ln       net.Listener
	backends atomic.Pointer[[]string]
	mode     atomic.Value // proxyMode
	latency  atomic.Int64 // nanoseconds added before relaying
	next     atomic.Uint64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

type proxyMode string

const (
	proxyPass   proxyMode = "pass"
	proxyRefuse proxyMode = "refuse" // close at once: a connection refused / reset
	proxyHang   proxyMode = "hang"   // accept and never answer: the apiserver times out
)

func newProxy(backends ...string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.setBackends(backends...)
	p.mode.Store(proxyPass)
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setBackends(b ...string) { p.backends.Store(&b) }

// setMode switches the fault. Entering an outage also cuts the open connections: the
// apiserver keeps its connections to a webhook alive, and an outage that spared them would
// be no outage.
func (p *proxy) setMode(m proxyMode) {
	p.mode.Store(m)
	if m != proxyPass {
		p.cutAll()
	}
}

func (p *proxy) setLatency(d time.Duration) { p.latency.Store(int64(d)) }

func (p *proxy) serve() {
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

func (p *proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *proxy) handle(c net.Conn) {
	switch p.mode.Load().(proxyMode) {
	case proxyRefuse:
		return
	case proxyHang:
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
func (p *proxy) dial() (net.Conn, error) {
	bs := *p.backends.Load()
	start := p.next.Add(1)
	var last error = errors.New("no backends")
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

// cutAll closes every open connection, as a network blip or an apiserver ending its
// watches would. It returns how many it cut.
func (p *proxy) cutAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	return len(p.conns)
}

func (p *proxy) close(ctx context.Context) {
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

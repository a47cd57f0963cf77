package controlplane

import (
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// SlowRequest is how long an API request may take to answer before LogSlowRequests logs it.
const SlowRequest = time.Second

// LogSlowRequests logs every request of rc's clients that takes SlowRequest or more to
// answer (to its response headers; watches excepted, they are meant to last), with where
// the time went: waiting for a connection, sending the request, or waiting for the
// apiserver's answer. Without it, a write that stalls a run says nothing of whether the
// client, the connection or the apiserver held it.
//
// It wraps the transport and so shares the connections of every client with the same TLS
// settings, as before (client-go caches the transport under the wrapper).
func LogSlowRequests(rc *rest.Config, log logr.Logger) {
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &slowLogger{next: rt, log: log, after: SlowRequest}
	})
}

type slowLogger struct {
	next  http.RoundTripper
	log   logr.Logger
	after time.Duration // log requests that take this long or longer
}

// WrappedRoundTripper lets client-go's utilities (utilnet.CloseIdleConnectionsFor) reach
// the transport underneath.
func (s *slowLogger) WrappedRoundTripper() http.RoundTripper { return s.next }

// requestTimes are the moments httptrace reports, from the trace's own goroutines.
type requestTimes struct {
	mu                        sync.Mutex
	gotConn, wrote, firstByte time.Time
	reused, handshake         bool
}

// RoundTrip passes req on, and logs where the time went when it took s.after or longer;
// watches, which are long by design, pass unlogged.
func (s *slowLogger) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		return s.next.RoundTrip(req)
	}
	var rt requestTimes
	set := func(f func()) { rt.mu.Lock(); f(); rt.mu.Unlock() }
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			set(func() { rt.gotConn, rt.reused = time.Now(), i.Reused })
		},
		TLSHandshakeStart:    func() { set(func() { rt.handshake = true }) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { set(func() { rt.wrote = time.Now() }) },
		GotFirstResponseByte: func() { set(func() { rt.firstByte = time.Now() }) },
	}
	start := time.Now()
	resp, err := s.next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	took := time.Since(start)
	if took < s.after {
		return resp, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	since := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Sub(start).Round(time.Millisecond).String()
	}
	kv := []any{"method", req.Method, "path", req.URL.Path, "agent", agent(req), "took", took.Round(time.Millisecond).String(),
		"gotConn", since(rt.gotConn), "reused", rt.reused, "tlsHandshake", rt.handshake,
		"wroteRequest", since(rt.wrote), "firstByte", since(rt.firstByte)}
	if resp != nil {
		kv = append(kv, "status", resp.StatusCode, "auditID", resp.Header.Get("Audit-Id"))
	}
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	s.log.Info("Slow API request", kv...)
	return resp, err
}

// agent is the client's user agent up to its first space: which of the simulator's clients.
func agent(req *http.Request) string {
	a, _, _ := strings.Cut(req.UserAgent(), " ")
	return a
}

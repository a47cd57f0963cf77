package setup

import (
	"bufio"
	"io"
	"net/http"

	"k8s.io/client-go/rest"
)

// watchReadAhead is the read-ahead buffer of each watch response body: a few dozen
// cloud-sized Nodes, for the handful of watches a gate keeps open.
const watchReadAhead = 256 << 10

// withReadAhead returns a copy of rc whose watch response bodies are read through a
// buffer.
//
// Go's HTTP/2 client returns flow-control credit to the apiserver (a WINDOW_UPDATE frame,
// a TLS record and a write syscall) on every read of 4 KiB or more from a response body,
// and the watch decoder reads one object at a time: one write per Node event, 50,000 of
// them as the gate lists a cluster of 50,000 nodes (docs/performance.md has the share of
// its start). Through the buffer, one read takes whatever has already arrived, up to the
// buffer's size, and one update covers all of it. A read still returns as soon as
// anything has arrived, so no event waits for the buffer to fill.
func withReadAhead(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readAhead{next: rt} })
	return rc
}

type readAhead struct{ next http.RoundTripper }

// RoundTrip buffers the body of a watch's response; other responses are small and read
// whole, and keep theirs.
func (t readAhead) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	resp.Body = bufferedBody{Reader: bufio.NewReaderSize(resp.Body, watchReadAhead), Closer: resp.Body}
	return resp, nil
}

// bufferedBody reads through its Reader and closes the body underneath.
type bufferedBody struct {
	*bufio.Reader
	io.Closer
}

package setup

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/client-go/rest"
)

// tlsServer is an HTTP/2 server over TLS, as the apiserver is, and a client for it built
// from rc as the gate's manager builds its own.
func tlsServer(tb testing.TB, h http.HandlerFunc, wrap func(*rest.Config) *rest.Config, up *atomic.Int64) (*http.Client, string) {
	tb.Helper()
	srv := httptest.NewUnstartedServer(h)
	if up != nil {
		srv.Listener = countingListener{Listener: srv.Listener, n: up}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	rc := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	c, err := rest.HTTPClientFor(wrap(rc))
	if err != nil {
		tb.Fatal(err)
	}
	return c, srv.URL
}

func same(rc *rest.Config) *rest.Config { return rc }

// A watch's read returns what has arrived without waiting for the buffer to fill: the
// server sends its second event only after the client has read the first.
func TestReadAheadReturnsWhatArrived(t *testing.T) {
	read := make(chan struct{})
	c, url := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-read:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "second")
	}, withReadAhead, nil)
	for _, tc := range []struct {
		query    string
		buffered bool
	}{{"?watch=true", true}, {"?watch=false", false}, {"", false}} {
		t.Run(tc.query, func(t *testing.T) {
			resp, err := c.Get(url + "/api/v1/nodes" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, ok := resp.Body.(bufferedBody); ok != tc.buffered {
				t.Fatalf("body buffered: %v, want %v", ok, tc.buffered)
			}
			got := make([]byte, len("first"))
			done := make(chan error, 1)
			go func() { _, err := io.ReadFull(resp.Body, got); done <- err }()
			select {
			case err := <-done:
				if err != nil || string(got) != "first" {
					t.Fatalf("read %q, %v; want first", got, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read waited for more than had arrived")
			}
			read <- struct{}{}
			rest, err := io.ReadAll(resp.Body)
			if err != nil || string(rest) != "second" {
				t.Fatalf("then read %q, %v; want second", rest, err)
			}
		})
	}
}

// BenchmarkWatchReadAhead reads a watch stream of 1000 Node-sized, length-delimited
// frames, as client-go's watch decoder does (a 4-byte length, then the object), straight
// from the HTTP/2 body and through the read-ahead buffer. After each frame the reader
// hashes it, as a stand-in for decoding it: a gate that lists a large cluster decodes
// more slowly than the apiserver sends, and the frames wait in the body. It reports the
// bytes the client sent back per frame (its flow-control updates, in TLS records) and the
// process's CPU per frame, both ends of the stream included.
func BenchmarkWatchReadAhead(b *testing.B) {
	const frames, size = 1000, 16 << 10
	frame := make([]byte, 4+size)
	binary.BigEndian.PutUint32(frame, size)
	h := func(w http.ResponseWriter, _ *http.Request) {
		for range frames {
			if _, err := w.Write(frame); err != nil {
				return
			}
		}
	}
	for _, c := range []struct {
		name string
		wrap func(*rest.Config) *rest.Config
	}{{"direct", same}, {"read-ahead", withReadAhead}} {
		b.Run(c.name, func(b *testing.B) {
			var up atomic.Int64
			client, url := tlsServer(b, h, c.wrap, &up)
			url += "/api/v1/nodes?watch=true"
			buf := make([]byte, size)
			var sum [32]byte
			cpu0 := processCPU(b)
			for b.Loop() {
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				fr := framer.NewLengthDelimitedFrameReader(resp.Body)
				for i := range frames {
					if n, err := fr.Read(buf); err != nil || n != size {
						b.Fatalf("frame %d: read %d, %v", i, n, err)
					}
					for range 4 {
						sum = sha256.Sum256(buf)
					}
				}
				resp.Body.Close()
			}
			n := float64(b.N * frames)
			b.ReportMetric(float64(up.Load())/n, "B-up/frame")
			b.ReportMetric(float64(processCPU(b)-cpu0)/n, "cpu-ns/frame")
			_ = sum
		})
	}
}

// processCPU is this process's CPU time so far, user and system, in nanoseconds.
func processCPU(b *testing.B) int64 {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// countingListener counts the bytes its connections read: what the client sent.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{Conn: c, n: l.n}, err
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

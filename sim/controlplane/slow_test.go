package controlplane

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// A request that takes the threshold or longer is logged with its method, path, client and
// where its time went; a quicker one, and a watch however long, is not.
func TestSlowLogger(t *testing.T) {
	const hold = 20 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" || r.URL.Query().Get("watch") == "true" {
			time.Sleep(hold)
		}
		w.WriteHeader(http.StatusConflict)
	}))
	defer srv.Close()

	for _, tc := range []struct {
		path  string
		after time.Duration
		want  bool
	}{
		{"/slow", hold, true},                 // the handler alone holds it that long
		{"/fast", time.Minute, false},         // never a minute
		{"/slow?watch=true", 0, false},        // watches are meant to last
		{"/api/v1/pods?watch=false", 0, true}, // not a watch: every request reaches 0
	} {
		var out bytes.Buffer
		s := &slowLogger{next: http.DefaultTransport, log: zap.New(zap.WriteTo(&out)), after: tc.after}
		req, _ := http.NewRequest(http.MethodPut, srv.URL+tc.path, nil)
		req.Header.Set("User-Agent", "startupgate-sim-kubelet/v0 (linux/amd64)")
		resp, err := s.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		logged := out.String()
		if got := strings.Contains(logged, "Slow API request"); got != tc.want {
			t.Errorf("%s (after %v): logged %v, want %v: %q", tc.path, tc.after, got, tc.want, logged)
			continue
		}
		if !tc.want {
			continue
		}
		path, _, _ := strings.Cut(tc.path, "?")
		for _, want := range []string{`"method":"PUT"`, `"path":"` + path + `"`, `"agent":"startupgate-sim-kubelet/v0"`,
			`"status":409`, `"gotConn":"`, `"firstByte":"`} {
			if !strings.Contains(logged, want) {
				t.Errorf("%s: log %q lacks %s", tc.path, logged, want)
			}
		}
		if strings.Contains(logged, `"firstByte":"never"`) {
			t.Errorf("%s: the trace saw no response byte: %q", tc.path, logged)
		}
	}
}

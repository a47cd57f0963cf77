package controlplane

import (
	"strings"
	"testing"
)

// TestReadFailOpens: the apiserver's fail-open lines are counted for the run whose webhook
// URL they name, a timeout apart from a call that never reached the webhook.
func TestReadFailOpens(t *testing.T) {
	const prefix = `W1202 03:38:13.086971   22861 dispatcher.go:205] Failed calling webhook, failing open pod-guard.startup.k8s.io: failed calling webhook "pod-guard.startup.k8s.io": failed to call webhook: `
	log := strings.Join([]string{
		prefix + `Post "https://127.0.0.1:38281/validate-pod?timeout=3s": context deadline exceeded`,
		prefix + `Post "https://127.0.0.1:38281/validate-pod?timeout=3s": read tcp 127.0.0.1:37696->127.0.0.1:38281: read: connection reset by peer`,
		prefix + `Post "https://127.0.0.1:38281/validate-pod?timeout=3s": EOF`,
		prefix + `Post "https://127.0.0.1:38281/validate-pod?timeout=3s": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`,
		prefix + `Post "https://127.0.0.1:44997/validate-pod?timeout=3s": context deadline exceeded`, // another run's
		`W1202 03:38:14.000000   22861 dispatcher.go:205] Failed calling webhook, failing open node.startup.k8s.io: failed calling webhook "node.startup.k8s.io": failed to call webhook: Post "https://127.0.0.1:38281/mutate-node?timeout=10s": context deadline exceeded`,
		`I1202 03:38:15.000000   22861 trace.go:236] Trace[1]: "Create" url:/api/v1/namespaces/x/pods/web/binding 127.0.0.1:38281/validate-pod`,
	}, "\n")
	got, err := ReadFailOpens(strings.NewReader(log), "127.0.0.1:38281/validate-pod")
	if err != nil {
		t.Fatal(err)
	}
	if want := (FailOpens{TimedOut: 2, Unreached: 2}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

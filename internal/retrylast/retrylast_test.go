package retrylast

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestOnConflictKeepsTheLastError: each attempt's errors in turn, and what OnError returns.
// The cancelled and timed-out cases are the ones client-go's retry.OnError gets wrong: it
// returns nil, or the conflict before, for an attempt cut off by its context.
func TestOnConflictKeepsTheLastError(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed"))
	cancelled := &url.Error{Op: "Patch", URL: "https://apiserver/api/v1/nodes/n1", Err: context.Canceled}
	timedOut := fmt.Errorf("reading node: %w", context.DeadlineExceeded)
	other := errors.New("forbidden")
	for name, tc := range map[string]struct {
		attempts []error
		want     error
	}{
		"first try":                        {attempts: []error{nil}, want: nil},
		"after a conflict":                 {attempts: []error{conflict, nil}, want: nil},
		"cancelled":                        {attempts: []error{cancelled}, want: context.Canceled},
		"cancelled after a conflict":       {attempts: []error{conflict, cancelled}, want: context.Canceled},
		"timed out":                        {attempts: []error{timedOut}, want: context.DeadlineExceeded},
		"not retriable":                    {attempts: []error{other}, want: other},
		"conflicts until the backoff ends": {attempts: []error{conflict, conflict, conflict, conflict, conflict}, want: conflict},
	} {
		t.Run(name, func(t *testing.T) {
			i := 0
			err := OnError(wait.Backoff{Steps: len(tc.attempts), Duration: 1}, apierrors.IsConflict, func() error {
				i++
				return tc.attempts[i-1]
			})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("OnError = %v, want %v", err, tc.want)
			}
			if i != len(tc.attempts) {
				t.Errorf("%d attempts, want %d", i, len(tc.attempts))
			}
		})
	}
}

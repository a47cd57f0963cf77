// Package retrylast retries like client-go's retry.OnError, but never loses the last
// attempt's error. retry.OnError reads an attempt's error that wraps context.Canceled or
// context.DeadlineExceeded (a caller stopping, a request timing out) as its own
// interruption and returns the retriable error before it, nil when there was none: a write
// cancelled in flight then looked like a write that succeeded (the gate's explorer logged
// 1878 recovered nil-pointer panics from it).
package retrylast

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// OnError calls fn until it returns nil, an error retriable does not accept, or backoff
// runs out, and returns the last attempt's error.
func OnError(backoff wait.Backoff, retriable func(error) bool, fn func() error) error {
	var last error
	// The condition never fails: the wait ends on success, on a final error, or when the
	// steps run out, and in every case last is the answer.
	_ = wait.ExponentialBackoff(backoff, func() (bool, error) {
		last = fn()
		return last == nil || !retriable(last), nil
	})
	return last
}

// OnConflict is OnError with client-go's DefaultRetry on conflicts, as
// retry.RetryOnConflict.
func OnConflict(fn func() error) error {
	return OnError(retry.DefaultRetry, apierrors.IsConflict, fn)
}

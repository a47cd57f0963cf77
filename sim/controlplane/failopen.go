package controlplane

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strings"
)

// FailOpens are the webhook calls the apiserver let through unanswered (failurePolicy
// Ignore), as its log tells them: only the apiserver knows that a call it made timed out
// after the webhook had decided, or never reached it.
type FailOpens struct {
	// TimedOut were not answered within the webhook's timeoutSeconds; Unreached failed
	// otherwise (refused, reset: the webhook's server down or going down).
	TimedOut, Unreached int
}

// failingOpen starts the line the apiserver logs for each (dispatcher.go).
const failingOpen = "Failed calling webhook, failing open"

// timedOut are what the apiserver's error says of a call that ran out of time: its context,
// its client's timeout, or a dial's.
var timedOut = []string{"context deadline exceeded", "Client.Timeout exceeded", "i/o timeout"}

// ReadFailOpens counts the fail-opens the apiserver logged in r for calls to url (a
// webhook's URL up to its path, which names one run's relay): a log shared by runs at once
// names each call's URL.
func ReadFailOpens(r io.Reader, url string) (FailOpens, error) {
	var f FailOpens
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, failingOpen) || !strings.Contains(line, url) {
			continue
		}
		if slices.ContainsFunc(timedOut, func(s string) bool { return strings.Contains(line, s) }) {
			f.TimedOut++
		} else {
			f.Unreached++
		}
	}
	return f, sc.Err()
}

// FailOpensSince counts the fail-opens for url in the log at path past offset (its size
// when a run began).
func FailOpensSince(path string, offset int64, url string) (FailOpens, error) {
	fh, err := os.Open(path)
	if err != nil {
		return FailOpens{}, err
	}
	defer fh.Close()
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return FailOpens{}, err
	}
	return ReadFailOpens(fh, url)
}

// LogSize is the size of the log at path now (0: none yet).
func LogSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

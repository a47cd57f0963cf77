package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestRotateCAFlags: what rotate-ca refuses before it reaches a cluster, and its help.
func TestRotateCAFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--overlap", "30s"}, "at least 2m0s"},
		{[]string{"--overlaps", "5m"}, "unknown flag"},
	} {
		err := runRotateCA(context.Background(), tc.args, io.Discard, io.Discard, time.Now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rotate-ca %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	var help strings.Builder
	if err := runRotateCA(context.Background(), []string{"--help"}, io.Discard, &help, time.Now); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("rotate-ca --help: %v", err)
	}
	for _, want := range []string{"Usage: gate rotate-ca", "--overlap duration", "--cert-secret string"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("rotate-ca --help does not say %q:\n%s", want, help.String())
		}
	}
}

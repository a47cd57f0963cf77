package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/gate/certs"
)

const rotateCAUsage = `Usage: gate rotate-ca [--overlap 10m] [--kubeconfig FILE] [--context NAME]
                    [--gate-namespace startupgate-system] [--cert-secret startupgate-webhook-ca]

With certificates.mode gate (the chart's default; --cert-secret), puts a new webhook CA in
the gate's Secret and keeps the old one trusted beside it for --overlap: within 15 s the
replicas write both into the webhooks' caBundle, at their first check from 45 s after the
rotation on they serve certificates of the new CA, and at the overlap's end the old CA
leaves the caBundle. Every replica must run a gate that has rotate-ca (an older one writes
the new CA alone into the caBundle), and the clocks of this machine and the replicas must
agree within a few seconds. It needs get and update on that Secret; the chart names it
<release>-webhook-ca.

Flags:
`

// rotateCAFlags are gate rotate-ca's.
type rotateCAFlags struct {
	kubeconfig, kubeContext, namespace, secret string
	overlap                                    time.Duration
}

// runRotateCA is `gate rotate-ca`: certs.Rotate on the running gate's Secret, stamped with
// now() as it writes, not as it started: a login (an exec plugin) may take minutes between.
func runRotateCA(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) error {
	var f rotateCAFlags
	fs := pflag.NewFlagSet("rotate-ca", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, rotateCAUsage); fs.PrintDefaults() }
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.kubeContext, "context", "", "the kubeconfig context to use")
	fs.StringVar(&f.namespace, "gate-namespace", "startupgate-system", "the gate's namespace, where its CA's Secret is")
	fs.StringVar(&f.secret, "cert-secret", "startupgate-webhook-ca", "the Secret the gate keeps its webhook CA in (its --cert-secret; the chart's is <release>-webhook-ca)")
	fs.DurationVar(&f.overlap, "overlap", 10*time.Minute, fmt.Sprintf("how long the old CA stays trusted beside the new one (at least %s)", certs.MinOverlap))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("rotate-ca takes no arguments, got %q", fs.Args())
	}
	if f.overlap < certs.MinOverlap {
		return fmt.Errorf("rotate-ca --overlap %s: at least %s, so that every replica has switched to the new CA before the old one leaves the caBundle", f.overlap, certs.MinOverlap)
	}
	rc, err := restConfig(f.kubeconfig, f.kubeContext)
	if err != nil {
		return err
	}
	return rotateCA(ctx, rc, f, stdout, now)
}

func rotateCA(ctx context.Context, rc *rest.Config, f rotateCAFlags, stdout io.Writer, now func() time.Time) error {
	c, err := client.New(rc, client.Options{Scheme: gate.Scheme()})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	key := types.NamespacedName{Namespace: f.namespace, Name: f.secret}
	at := now()
	until, err := certs.Rotate(ctx, c, key, f.overlap, at)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rotated the webhook CA in Secret %s: the replicas switch to the new CA at their first check from %s on; the old CA stays trusted until %s\n",
		key, at.Add(certs.SwitchAfter).UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	return nil
}

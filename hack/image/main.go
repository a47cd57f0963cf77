// Command image builds the gate's container image without Docker: FROM scratch, one layer
// with the static binary as /gate, run as 65532:65532, OCI labels from the commit. It writes
// a tarball for docker load, kind load image-archive or crane push, opens it again to check
// it, and prints its digest. `make image` runs it.
//
// It is a Go module of its own, so go-containerregistry never enters the gate's dependencies.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		binary = flag.String("binary", "", "the static gate binary")
		out    = flag.String("out", "out/startupgate.tar", "the tarball to write")
		tag    = flag.String("tag", "ghcr.io/startupgate/startupgate:dev", "the image's name and tag")
		epoch  = flag.Int64("created", 0, "creation time, Unix seconds (the commit's time: SOURCE_DATE_EPOCH)")
		m      Meta
	)
	flag.StringVar(&m.Version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&m.Revision, "revision", "unknown", "org.opencontainers.image.revision (the commit)")
	flag.StringVar(&m.Source, "source", "https://github.com/startupgate/startupgate", "org.opencontainers.image.source")
	flag.StringVar(&m.Arch, "arch", runtime.GOARCH, "the binary's architecture")
	flag.Parse()
	m.Created = time.Unix(*epoch, 0).UTC()

	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	img, err := Build(bin, m)
	if err != nil {
		return err
	}
	if err := Write(*out, *tag, img); err != nil {
		return err
	}
	sum, err := Verify(*out, bin)
	if err != nil {
		return fmt.Errorf("checking %s: %w", *out, err)
	}
	fmt.Printf("%s %s\ndigest   %s\nimage id %s\nlayer    %d bytes (compressed), /gate sha256:%s\n",
		*out, *tag, sum.Digest, sum.ImageID, sum.Size, sum.BinarySHA256)
	return nil
}

package node

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The images a real node runs, built here from the parts' static busybox, since nothing can
// be pulled: the Pod sandbox ("pause"), and a small image with a shell and the usual tools
// for init and workload Pods (the example init DaemonSet's script runs in it unchanged).
const (
	// SandboxImage is containerd's pinned sandbox image: busybox sleeping forever. The
	// sandbox is stopped with SIGKILL, so it needs no signal handling.
	SandboxImage = "startupgate.local/pause:busybox"
	// ToolsImage has busybox as /bin/sh and its applets on PATH.
	ToolsImage = "startupgate.local/tools:busybox"
)

// applets are the busybox applets ToolsImage links into /bin.
var applets = []string{"sh", "sleep", "cat", "touch", "echo", "ls", "wget", "true", "false", "env", "date"}

// image is a single-layer image: its files and how it starts.
type image struct {
	ref        string
	links      []string // names in /bin linked to /bin/busybox
	entrypoint []string
}

// writeImages writes each image the node imports as a docker archive (what ctr images
// import reads) into dir, and returns their paths.
func writeImages(dir, busybox string) ([]string, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin); err != nil {
		return nil, fmt.Errorf("%s: %w", busybox, err)
	}
	var paths []string
	for i, img := range []image{
		{ref: SandboxImage, links: []string{"sleep"}, entrypoint: []string{"/bin/sleep", "2147483647"}},
		{ref: ToolsImage, links: applets, entrypoint: []string{"/bin/sh"}},
	} {
		p := filepath.Join(dir, fmt.Sprintf("image-%d.tar", i))
		if err := writeArchive(p, img, bin); err != nil {
			return nil, fmt.Errorf("writing %s: %w", img.ref, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// checkStatic: an image FROM nothing can only run a binary that needs no loader.
func checkStatic(bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked; install Debian's busybox-static")
		}
	}
	return nil
}

// writeArchive writes img as a docker archive: manifest.json, the config, and one
// uncompressed layer holding /bin/busybox and img's links to it.
func writeArchive(path string, img image, busybox []byte) error {
	layer, err := layerTar(img, busybox)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config":       map[string]any{"Entrypoint": img.entrypoint, "Env": []string{"PATH=/bin"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	if err != nil {
		return err
	}
	configSum := sha256.Sum256(config)
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{img.ref}, "Layers": []string{layerName}}})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{layerName, layer}, {configName, config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// layerTar is the image's one layer: /bin/busybox, a symlink in /bin for each link, and
// an empty /tmp.
func layerTar(img image, busybox []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	headers := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(busybox)), ModTime: epoch},
	}
	for _, l := range img.links {
		headers = append(headers, &tar.Header{Name: "bin/" + l, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: epoch})
	}
	for _, h := range headers {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Name == "bin/busybox" {
			if _, err := tw.Write(busybox); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

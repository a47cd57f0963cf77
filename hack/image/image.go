package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// binaryPath is where the gate lives in the image: the Deployment's command.
	binaryPath = "gate"
	// user is distroless's nonroot user, the Deployment's runAsUser:runAsGroup.
	user = "65532:65532"
)

var entrypoint = []string{"/" + binaryPath}

// Meta is what the image says about itself. Every field comes from the commit, never from
// the clock, so that two builds of one commit are the same image.
type Meta struct {
	Version  string
	Revision string
	Source   string
	Created  time.Time
	Arch     string
}

func (m Meta) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "startupgate",
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.source":   m.Source,
		"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
	}
}

// Build assembles the image FROM scratch: one layer holding the static binary as /gate.
func Build(binary []byte, m Meta) (v1.Image, error) {
	layer, err := binaryLayer(binary, m.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: m.Created}, CreatedBy: "hack/image: /gate"},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", m.Arch
	cf.Created = v1.Time{Time: m.Created}
	cf.Config.User = user
	cf.Config.Entrypoint = entrypoint
	cf.Config.Labels = m.labels()
	return mutate.ConfigFile(img, cf)
}

// binaryLayer is a tar of one file with fixed owner, mode and time: the layer's bytes depend
// on the binary alone. Its gzip is kept once made: the digest and the write would each
// compress it again.
func binaryLayer(binary []byte, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	buf.Grow(len(binary) + 4<<10) // the binary and its headers, without regrowing
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: binaryPath, Mode: 0o755, Size: int64(len(binary)), ModTime: mtime.UTC(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// Write writes img as one tarball in two formats at once, as `docker save` does since
// Docker 25: an OCI image layout (oci-layout, index.json, blobs/) for kind load
// image-archive and crane, and a manifest.json that points into the same blobs for docker
// load. Entries are sorted and carry fixed times and modes, so the file is reproducible too.
func Write(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("parsing tag %q: %w", tag, err)
	}
	files, err := archiveFiles(ref, img)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0).UTC()}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// archiveFiles returns the tarball's files by name.
func archiveFiles(ref name.Tag, img v1.Image) (map[string][]byte, error) {
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`)}
	blob := func(d v1.Hash) string { return "blobs/" + d.Algorithm + "/" + d.Hex }
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	digest, _ := img.Digest()
	configName, _ := img.ConfigName()
	files[blob(digest)], files[blob(configName)] = manifest, config
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		if files[blob(d)], err = readAll(l.Compressed()); err != nil {
			return nil, err
		}
		layerPaths = append(layerPaths, blob(d))
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIManifestSchema1, Digest: digest, Size: int64(len(manifest)),
		Annotations: map[string]string{"io.containerd.image.name": ref.Name(), "org.opencontainers.image.ref.name": ref.TagStr()},
	}}}
	docker := tarball.Manifest{{Config: blob(configName), RepoTags: []string{ref.Name()}, Layers: layerPaths}}
	if files["index.json"], err = json.Marshal(index); err != nil {
		return nil, err
	}
	files["manifest.json"], err = json.Marshal(docker)
	return files, err
}

func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Summary is what Verify found in a tarball.
type Summary struct {
	Digest       v1.Hash // the OCI manifest's: what a registry and containerd call the image
	ImageID      v1.Hash // the config's: what docker images shows as IMAGE ID
	Size         int64   // the layer, compressed: what a node pulls
	BinarySHA256 string
}

// Verify opens the tarball at path through its OCI index and checks what the Deployment
// relies on: the entrypoint, the non-root user, and a static Linux binary at /gate, equal
// to want if given. It also checks that docker load's manifest.json names the same image.
func Verify(path string, want []byte) (Summary, error) {
	s, _, err := verify(path, want)
	return s, err
}

// verify is Verify that also returns the /gate it checked.
func verify(path string, want []byte) (Summary, []byte, error) {
	img, docker, err := openArchive(path)
	if err != nil {
		return Summary{}, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Summary{}, nil, err
	}
	errs := checkConfig(cf)
	binary, size, err := onlyFile(img)
	if err != nil {
		return Summary{}, nil, errors.Join(append(errs, err)...)
	}
	if err := checkStatic(binary); err != nil {
		errs = append(errs, err)
	}
	if want != nil && !bytes.Equal(binary, want) {
		errs = append(errs, errors.New("/gate is not the binary the image was built from"))
	}
	s := Summary{Size: size}
	s.Digest, _ = img.Digest()
	s.ImageID, _ = img.ConfigName()
	if len(docker) != 1 || docker[0].Config != "blobs/sha256/"+s.ImageID.Hex {
		errs = append(errs, fmt.Errorf("manifest.json %+v does not name config %s", docker, s.ImageID))
	}
	sum := sha256.Sum256(binary)
	s.BinarySHA256 = hex.EncodeToString(sum[:])
	return s, binary, errors.Join(errs...)
}

func checkConfig(cf *v1.ConfigFile) []error {
	var errs []error
	if !slices.Equal(cf.Config.Entrypoint, entrypoint) {
		errs = append(errs, fmt.Errorf("entrypoint %v, want %v", cf.Config.Entrypoint, entrypoint))
	}
	if cf.Config.User != user {
		errs = append(errs, fmt.Errorf("user %q, want %q", cf.Config.User, user))
	}
	if cf.OS != "linux" {
		errs = append(errs, fmt.Errorf("os %q, want linux", cf.OS))
	}
	for _, l := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision"} {
		if cf.Config.Labels[l] == "" {
			errs = append(errs, fmt.Errorf("label %s is empty", l))
		}
	}
	return errs
}

// openArchive reads the tarball's one image through index.json, and its manifest.json.
func openArchive(path string) (v1.Image, tarball.Manifest, error) {
	files, err := untar(path)
	if err != nil {
		return nil, nil, err
	}
	index, err := v1.ParseIndexManifest(bytes.NewReader(files["index.json"]))
	if err != nil {
		return nil, nil, fmt.Errorf("index.json: %w", err)
	}
	if len(index.Manifests) != 1 {
		return nil, nil, fmt.Errorf("index.json lists %d images, want 1", len(index.Manifests))
	}
	var docker tarball.Manifest
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil {
		return nil, nil, fmt.Errorf("manifest.json: %w", err)
	}
	img, err := partial.CompressedToImage(blobImage{files: files, desc: index.Manifests[0]})
	return img, docker, err
}

func untar(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if files[hdr.Name], err = readEntry(tr, hdr); err != nil {
			return nil, err
		}
	}
}

// readEntry reads the tar entry into a buffer of its own size: a growing one would copy
// a binary of tens of MB several times over.
func readEntry(tr *tar.Reader, hdr *tar.Header) ([]byte, error) {
	if hdr.Size < 0 || hdr.Size > maxEntry {
		return nil, fmt.Errorf("tar entry %s: size %d out of range", hdr.Name, hdr.Size)
	}
	b := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, b); err != nil {
		return nil, fmt.Errorf("tar entry %s: %w", hdr.Name, err)
	}
	return b, nil
}

// maxEntry bounds what readEntry allocates for a header's word: far above any gate binary.
const maxEntry = 1 << 30

// blobImage is an image read from the blobs of an OCI layout held in memory.
type blobImage struct {
	files map[string][]byte
	desc  v1.Descriptor
}

func (b blobImage) blob(d v1.Hash) ([]byte, error) {
	raw, ok := b.files["blobs/"+d.Algorithm+"/"+d.Hex]
	if !ok {
		return nil, fmt.Errorf("blob %s missing", d)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(raw)); got != d {
		return nil, fmt.Errorf("blob %s has digest %s", d, got)
	}
	return raw, nil
}

func (b blobImage) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }
func (b blobImage) RawManifest() ([]byte, error)        { return b.blob(b.desc.Digest) }
func (b blobImage) RawConfigFile() ([]byte, error) {
	m, err := partial.Manifest(b)
	if err != nil {
		return nil, err
	}
	return b.blob(m.Config.Digest)
}
func (b blobImage) LayerByDigest(d v1.Hash) (partial.CompressedLayer, error) {
	raw, err := b.blob(d)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
}

// onlyFile returns the content of /gate, the one file of the image's one layer, and the
// layer's compressed size.
func onlyFile(img v1.Image) ([]byte, int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, 0, err
	}
	if len(layers) != 1 {
		return nil, 0, fmt.Errorf("%d layers, want 1", len(layers))
	}
	size, err := layers[0].Size()
	if err != nil {
		return nil, 0, err
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return nil, 0, fmt.Errorf("reading the layer: %w", err)
	}
	if hdr.Name != binaryPath || hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 {
		return nil, 0, fmt.Errorf("layer entry %s (type %c, mode %o, owner %d:%d), want %s, a regular file, mode 755, owner 0:0",
			hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, binaryPath)
	}
	binary, err := readEntry(tr, hdr)
	if err != nil {
		return nil, 0, err
	}
	if _, err := tr.Next(); err != io.EOF {
		return nil, 0, fmt.Errorf("the layer holds more than %s", binaryPath)
	}
	return binary, size, nil
}

// checkStatic: the image has no libc and no loader, so the binary must be a statically
// linked Linux executable.
func checkStatic(binary []byte) error {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("/gate is not an ELF binary: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("/gate is an ELF %s, not an executable", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("/gate is dynamically linked (it has an interpreter); build it with CGO_ENABLED=0")
		}
	}
	return nil
}

package hack

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file the repository may track: anything bigger is almost
// always a build output or a data dump committed by mistake.
const maxTrackedSize = 1 << 20

// allowedBinary lists the tracked files that are not text, each with why it must be in the
// tree. A pattern is matched with path.Match against the path from the repository's root.
var allowedBinary = map[string]string{
	"docs/*.png": "the README's and the docs' pictures, rendered from real runs",
}

// trackedFile is what the check needs to know of one tracked file.
type trackedFile struct {
	path string
	size int64
	head []byte // the first bytes of its content
}

// executableMagic are the leading bytes of the executable formats Go can build.
var executableMagic = [][]byte{
	[]byte("\x7fELF"),        // Linux, the BSDs
	{0xfe, 0xed, 0xfa, 0xce}, // Mach-O, 32-bit
	{0xfe, 0xed, 0xfa, 0xcf}, // Mach-O, 64-bit
	{0xce, 0xfa, 0xed, 0xfe}, // Mach-O, 32-bit, little-endian
	{0xcf, 0xfa, 0xed, 0xfe}, // Mach-O, 64-bit, little-endian
	[]byte("MZ"),             // Windows PE
	[]byte("\x00asm"),        // WebAssembly
}

// trackedProblem says what is wrong with one tracked file, or "" when nothing is.
func trackedProblem(f trackedFile) string {
	for _, m := range executableMagic {
		if bytes.HasPrefix(f.head, m) {
			return "an executable binary: build outputs belong in .gitignore"
		}
	}
	if f.size > maxTrackedSize {
		return fmt.Sprintf("%d bytes, over the %d-byte limit", f.size, maxTrackedSize)
	}
	if bytes.IndexByte(f.head, 0) >= 0 && allowedReason(f.path) == "" {
		return "not text, and not in allowedBinary (add it there with its reason, or remove it)"
	}
	return ""
}

// allowedReason is the allow-list's reason for a path, or "" when it is not listed.
func allowedReason(p string) string {
	for pattern, reason := range allowedBinary {
		if ok, _ := path.Match(pattern, p); ok {
			return reason
		}
	}
	return ""
}

func TestTrackedProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		file trackedFile
		bad  bool
	}{
		{"source", trackedFile{"gate/doc.go", 900, []byte("// Package gate")}, false},
		{"elf at the root", trackedFile{"simulate", 79919285, []byte("\x7fELF\x02\x01\x01")}, true},
		{"small elf", trackedFile{"bin/gate", 4096, []byte("\x7fELF\x02\x01\x01")}, true},
		{"windows binary", trackedFile{"gate.exe", 4096, []byte("MZ\x90\x00")}, true},
		{"large text", trackedFile{"out/soak.json", maxTrackedSize + 1, []byte("{")}, true},
		{"picture in docs", trackedFile{"docs/bench.png", 119675, []byte("\x89PNG\r\n\x1a\n\x00\x00")}, false},
		{"picture elsewhere", trackedFile{"out/bench.png", 119675, []byte("\x89PNG\r\n\x1a\n\x00\x00")}, true},
		{"large picture in docs", trackedFile{"docs/big.png", maxTrackedSize + 1, []byte("\x89PNG\r\n\x1a\n\x00")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trackedProblem(tc.file) != ""; got != tc.bad {
				t.Errorf("trackedProblem(%s) found a problem: %v, want %v (%q)", tc.file.path, got, tc.bad, trackedProblem(tc.file))
			}
		})
	}
}

// TestTrackedFiles fails when the repository tracks a build output: an executable binary,
// a file over 1 MiB, or any file that is not text and not on the allow-list.
func TestTrackedFiles(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout (git rev-parse: %v): there are no tracked files to check", err)
	}
	top := strings.TrimSpace(string(root))
	list, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, p := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		f, err := readTracked(top, p)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in the index
			}
			t.Fatal(err)
		}
		if problem := trackedProblem(f); problem != "" {
			t.Errorf("%s is tracked: %s", p, problem)
		}
	}
}

func readTracked(top, p string) (trackedFile, error) {
	fh, err := os.Open(filepath.Join(top, p))
	if err != nil {
		return trackedFile{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return trackedFile{}, err
	}
	head := make([]byte, 8000) // git's own test for binary content reads this much
	n, _ := fh.Read(head)
	return trackedFile{path: p, size: st.Size(), head: head[:n]}, nil
}

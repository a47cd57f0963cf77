package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/startupgate/startupgate/internal/golden"
)

// TestGoldenDecodingErrors pins the message a user sees for each malformed scenario file in
// testdata/scenario: NAME.input.yaml must fail to load with exactly NAME.output.txt, which
// starts with the file and the line at fault.
func TestGoldenDecodingErrors(t *testing.T) {
	inputs, err := filepath.Glob(golden.Path("scenario", "*.input.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata/scenario (%v)", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".input.yaml")
		t.Run(name, func(t *testing.T) {
			_, err := Load(in)
			if err == nil {
				t.Fatalf("%s loaded without error; every input here is malformed", in)
			}
			msg := strings.TrimPrefix(err.Error(), golden.Dir()+string(os.PathSeparator))
			golden.Compare(t, filepath.Join("scenario", name+".output.txt"), []byte(msg+"\n"))
		})
	}
}

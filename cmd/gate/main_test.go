package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestConfigExplicitFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://gate.example:6443
users:
- name: u
  user:
    token: t
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`
	if err := os.WriteFile(good, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	tests := []struct {
		name     string
		path     string
		wantHost string
		wantErr  []string // substrings of the error
	}{
		{name: "file", path: good, wantHost: "https://gate.example:6443"},
		{name: "missing file", path: missing, wantErr: []string{"--kubeconfig", missing}},
		{name: "file without a cluster", path: empty, wantErr: []string{"--kubeconfig", empty}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The explicit file wins over $KUBECONFIG.
			t.Setenv("KUBECONFIG", filepath.Join(dir, "elsewhere"))
			rc, err := restConfig(tc.path, "")
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("restConfig(%q) = %v, want an error", tc.path, rc.Host)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("restConfig(%q) error = %q, want it to contain %q", tc.path, err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("restConfig(%q) = %v", tc.path, err)
			}
			if rc.Host != tc.wantHost {
				t.Errorf("restConfig(%q).Host = %q, want %q", tc.path, rc.Host, tc.wantHost)
			}
		})
	}
}

// TestRestConfigWithoutCluster: with no kubeconfig anywhere and no in-cluster environment,
// the error is one line that names what to set, not controller-runtime's logged stack.
func TestRestConfigWithoutCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	home := t.TempDir()
	defer func(saved string) { homeKubeconfig = saved }(homeKubeconfig)
	homeKubeconfig = filepath.Join(home, ".kube", "config")
	for _, tc := range []struct {
		name, kubeconfig string
		want             string
	}{
		{"KUBECONFIG names a missing file", filepath.Join(home, "nonexistent"), "KUBECONFIG=" + filepath.Join(home, "nonexistent") + " names no usable kubeconfig"},
		{"nothing at all", "", "not in a Pod, no KUBECONFIG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			_, err := restConfig("", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("restConfig() error = %q, want one line containing %q", err, tc.want)
			}
		})
	}
}

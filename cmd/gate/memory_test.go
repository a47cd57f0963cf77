package main

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
	}{
		{"v2 limit", "memory.max", "268435456\n", 268435456},
		{"v2 none", "memory.max", "max\n", 0},
		{"v1 limit", "memory/memory.limit_in_bytes", "536870912\n", 536870912},
		{"v1 none", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"garbage", "memory.max", "lots\n", 0},
		{"no file", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				path := filepath.Join(root, tc.file)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := cgroupLimit(root); got != tc.want {
				t.Errorf("cgroupLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

// keepRuntime restores the process's memory limit and GC target after a test that sets them.
func keepRuntime(t *testing.T) {
	t.Helper()
	limit, percent := debug.SetMemoryLimit(-1), gcPercent()
	t.Cleanup(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	})
}

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestSetMemoryLimit(t *testing.T) {
	keepRuntime(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit(env(), t.TempDir()); got != 0 {
		t.Errorf("no cgroup limit: limit %d, want none", got)
	}
	if got := setMemoryLimit(env("GOMEMLIMIT", "2GiB"), root); got != 0 {
		t.Errorf("GOMEMLIMIT set (the runtime's own, here none): limit %d, want the cgroup's left unread", got)
	}
	if got := setMemoryLimit(env(), root); got != 900000000 {
		t.Errorf("cgroup limit 1e9: limit %d, want 9e8", got)
	}
}

// gatedCache's GetInformer returns once release is closed, or with ctx's error.
type gatedCache struct {
	release chan struct{}
	asked   chan client.Object
}

func (g *gatedCache) GetInformer(ctx context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	g.asked <- obj
	select {
	case <-g.release:
		return nil, nil
	case <-ctx.Done():
		return nil, errors.New("stopped")
	}
}

func TestStartGC(t *testing.T) {
	keepRuntime(t)
	debug.SetGCPercent(100)
	if newStartGC(env(), 0, nil) != nil {
		t.Error("no memory limit: the target changed")
	}
	if newStartGC(env("GOGC", "200"), 1<<30, nil) != nil {
		t.Error("GOGC set: the target changed")
	}
	if p := gcPercent(); p != 100 {
		t.Fatalf("target %d after the declined starts, want 100", p)
	}
	for _, stop := range []bool{false, true} {
		c := &gatedCache{release: make(chan struct{}), asked: make(chan client.Object, 2)}
		sg := newStartGC(env(), 1<<30, c, &corev1.Pod{}, &corev1.Node{})
		if p := gcPercent(); p != startGCPercent {
			t.Fatalf("under a limit: target %d, want %d", p, startGCPercent)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- sg.Start(ctx) }()
		<-c.asked
		if p := gcPercent(); p != startGCPercent {
			t.Errorf("while the first informer fills: target %d, want %d", p, startGCPercent)
		}
		if stop {
			cancel()
		} else {
			close(c.release)
			<-c.asked
		}
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		cancel()
		if p := gcPercent(); p != 100 {
			t.Errorf("after Start (manager stopped: %v): target %d, want 100 again", stop, p)
		}
	}
}

package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The gate's memory settings, which are the process's and not the shared wiring's (the
// simulator runs many gates in one process): a soft limit under the container's, and a
// lazier collector while the caches fill.

// memoryLimitShare is the share of the container's memory limit that the Go runtime is
// asked to stay under: the rest is for what it does not count (the binary's own pages).
const memoryLimitShare = 0.9

// unlimited is where cgroup v1 readings stop being limits: v1 reports a memory cgroup
// without one as the largest page-aligned int64 (v2 says "max"), and no real limit comes
// near 2^62 bytes.
const unlimited = 1 << 62

// cgroupLimit is the memory limit of the cgroup mounted at root, v2 or else v1; 0 when
// there is none or it cannot be read.
func cgroupLimit(root string) int64 {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || v <= 0 || v >= unlimited {
			return 0 // "max", or v1's unlimited
		}
		return v
	}
	return 0
}

// setMemoryLimit gives the runtime a soft memory limit of memoryLimitShare of the cgroup's
// under root, unless GOMEMLIMIT set one already, and returns the limit in effect (0: none).
// Without it, Go lets the heap grow to twice what is live before it collects, and a
// container limit set from the live figure kills the gate in its start instead.
func setMemoryLimit(getenv func(string) string, root string) int64 {
	if getenv("GOMEMLIMIT") == "" {
		if l := cgroupLimit(root); l > 0 {
			debug.SetMemoryLimit(int64(float64(l) * memoryLimitShare))
		}
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		return l
	}
	return 0
}

// startGCPercent is the collector's target while the informers list the cluster. The
// initial lists decode every Node and init Pod in full and trim most of each away, so
// the start allocates several times what it keeps; at Go's default of 100 the collector
// marked the growing cache again and again, a third of the start's CPU at 50,000 nodes
// (docs/performance.md). Under a memory limit the runtime collects as the heap nears it
// whatever the target, so the larger one costs no more memory than the limit allows.
const startGCPercent = 400

// informerGetter is the part of the manager's cache that startGC waits on.
type informerGetter interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// startGC raises the collector's target until the informers of objs have synced, then
// sets it back and returns the start's garbage to the operating system. It is a
// manager runnable that needs no leadership: objs are the informers a replica fills
// before it leads.
type startGC struct {
	cache informerGetter
	objs  []client.Object
	prev  int
}

// newStartGC raises the target now, before the manager starts, and returns the runnable
// that sets it back; nil, and nothing changed, when no memory limit bounds the heap or
// GOGC was set.
func newStartGC(getenv func(string) string, limit int64, c informerGetter, objs ...client.Object) *startGC {
	if limit == 0 || getenv("GOGC") != "" {
		return nil
	}
	return &startGC{cache: c, objs: objs, prev: debug.SetGCPercent(startGCPercent)}
}

// Start waits for the informers (GetInformer blocks until one has synced) and restores
// the target; the manager stopping first restores it too.
func (s *startGC) Start(ctx context.Context) error {
	defer func() {
		debug.SetGCPercent(s.prev)
		debug.FreeOSMemory()
	}()
	for _, o := range s.objs {
		if _, err := s.cache.GetInformer(ctx, o); err != nil {
			if ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "Waiting for the caches to fill; the collector's start target ends now")
			}
			return nil
		}
	}
	return nil
}

// NeedLeaderElection is false: every replica fills its caches.
func (s *startGC) NeedLeaderElection() bool { return false }

package setup

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/startupgate/startupgate/gate"
	"github.com/startupgate/startupgate/internal/testobj"
)

// recordingCache notes the informers asked for; nothing here starts the cache.
type recordingCache struct {
	cache.Cache
	mu    sync.Mutex
	kinds []string
}

func (c *recordingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.mu.Lock()
	c.kinds = append(c.kinds, typeName(obj))
	c.mu.Unlock()
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func typeName(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Node:
		return "Node"
	case *corev1.Pod:
		return "Pod"
	case *appsv1.DaemonSet:
		return "DaemonSet"
	}
	return "?"
}

// TestInformersCreatedBeforeStart: with a warm standby, AddToManager creates the Node and
// DaemonSet informers before the manager starts, so that the cache lists them at once with
// the init Pods'; a cold standby leaves them to the controllers, which start when it leads.
func TestInformersCreatedBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		cold bool
		want []string
	}{
		{false, []string{"DaemonSet", "Node"}},
		{true, nil},
	} {
		rec := &recordingCache{}
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
		mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
		mapper.Add(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), meta.RESTScopeNamespace)
		cfg := testobj.ValidConfig(t, nil)
		// No apiserver answers here: nothing may be asked of one before the manager starts.
		mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
			Scheme: gate.Scheme(), Cache: CacheOptions(cfg), Metrics: metricsserver.Options{BindAddress: "0"},
			// Both cases build the gate's controllers, under the same names, in one process.
			Controller:     ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
			MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
			NewCache: func(c *rest.Config, o cache.Options) (cache.Cache, error) {
				var err error
				rec.Cache, err = cache.New(c, o)
				return rec, err
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := AddToManager(context.Background(), mgr, cfg, Options{ColdStandby: tc.cold}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range rec.kinds {
			if k == "Node" || k == "DaemonSet" {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("cold standby %v: informers created before start %v, want %v", tc.cold, got, tc.want)
		}
	}
}

package gate

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/startupgate/startupgate/gate/config"
)

// TolerationChecker reports the one deadlock the gate can cause by configuration: a
// required component whose DaemonSet does not tolerate the startup taint never gets a Pod
// on a gated node, so those nodes can never be released. It emits a Warning event on the
// DaemonSet, sets startupgate_component_missing_toleration, and logs — once per DaemonSet
// generation.
type TolerationChecker struct {
	Client   client.Client
	Recorder events.EventRecorder
	Config   *config.Config

	mu       sync.Mutex
	reported map[types.UID]int64             // DaemonSet UID -> generation already reported
	missing  map[types.NamespacedName]string // DaemonSet -> component lacking the toleration
}

// Reconcile checks one DaemonSet.
func (t *TolerationChecker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ds := &appsv1.DaemonSet{}
	err := t.Client.Get(ctx, req.NamespacedName, ds)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	component := ""
	if err == nil && ds.DeletionTimestamp == nil {
		_, component = t.Config.ComponentOf(ds)
	}
	lacks := component != "" && !t.Config.Tolerates(ds.Spec.Template.Spec.Tolerations)

	t.mu.Lock()
	if t.missing == nil {
		t.missing, t.reported = map[types.NamespacedName]string{}, map[types.UID]int64{}
	}
	if lacks {
		t.missing[req.NamespacedName] = component
	} else {
		delete(t.missing, req.NamespacedName)
	}
	first := lacks && t.reported[ds.UID] != ds.Generation
	if first {
		t.reported[ds.UID] = ds.Generation
	}
	t.publishLocked()
	t.mu.Unlock()

	if first {
		t.Recorder.Eventf(ds, nil, "Warning", ReasonMissingToleration, eventActionCheckTolerate,
			"DaemonSet of required component %q does not tolerate every startup taint (%s): nodes it should initialize can never be released", component, t.Config.TaintList())
		log.FromContext(ctx).Info("Required component does not tolerate the startup taint; its nodes can never be released",
			"daemonset", klog.KObj(ds), "component", component, "taints", t.Config.TaintList())
	}
	return reconcile.Result{}, nil
}

func (t *TolerationChecker) publishLocked() {
	for _, r := range t.Config.EffectiveRules() {
		for _, comp := range r.ComponentNames() {
			v := 0.0
			for _, name := range t.missing {
				if name == comp {
					v = 1
				}
			}
			missingToleration.WithLabelValues(comp).Set(v)
		}
	}
}

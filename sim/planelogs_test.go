package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// Every process of the embedded plane writes its log into the plane's log directory, the
// two envtest starts (etcd, kube-apiserver) as well as the two it starts itself: a stall
// that a soak run meets is explained there or nowhere. Each has logged by the time the
// plane is up (etcd and the apiserver at start, the others as they take their leases).
func TestPlaneLogs(t *testing.T) {
	sharedPlane(t)
	for _, name := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		fi, err := os.Stat(filepath.Join(plane.LogDir, name+".log"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi.Size() == 0 {
			t.Errorf("%s's log in %s is empty", name, plane.LogDir)
		}
	}
}

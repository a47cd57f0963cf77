package helm_test

import (
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// TestKubeVersionPerMode: on Kubernetes 1.35 the webhook mode renders and the policy mode is
// refused with a message that says why; on 1.20 the chart is refused whole (its
// PodDisruptionBudget is policy/v1).
func TestKubeVersionPerMode(t *testing.T) {
	render := func(version, minor string, vals map[string]any) error {
		ch := loadChart(t)
		caps := *common.DefaultCapabilities
		caps.KubeVersion = common.KubeVersion{Version: version, Major: "1", Minor: minor}
		top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true}, &caps)
		if err != nil {
			return err
		}
		_, err = engine.Render(ch, top)
		return err
	}
	if err := render("v1.35.0", "35", nil); err != nil {
		t.Errorf("webhook mode on 1.35: %v", err)
	}
	if err := render("v1.35.0", "35", map[string]any{"mode": "policy"}); err == nil || !strings.Contains(err.Error(), "needs Kubernetes 1.36") {
		t.Errorf("policy mode on 1.35: %v, want a refusal that names 1.36", err)
	}
	if err := render("v1.36.3", "36", map[string]any{"mode": "policy"}); err != nil {
		t.Errorf("policy mode on 1.36: %v", err)
	}
	ch := loadChart(t)
	if chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, "v1.20.0") {
		t.Errorf("kubeVersion %q admits 1.20", ch.Metadata.KubeVersion)
	}
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, "v1.35.0") {
		t.Errorf("kubeVersion %q refuses 1.35", ch.Metadata.KubeVersion)
	}
}

package record

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/startupgate/startupgate/gate/config"
)

// PodIsReady is the simulator's own reading of readiness (Ready condition or the early
// annotation) — deliberately not the gate's code, so that a gate bug cannot hide itself.
func PodIsReady(p *corev1.Pod, cfg *config.Config) bool {
	if p.Annotations[cfg.ReadyAnnotation] == "true" {
		return true
	}
	if cfg.AnnotationOnly {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

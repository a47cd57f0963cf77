package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ExampleInit decodes the example init DaemonSet (deploy/startup-daemonset.yaml) and its
// RBAC as a real node here runs them: unchanged but for the container's image, which is
// ToolsImage, never pulled, since no registry can be reached. Its script needs only a
// shell, sleep and touch; its curl is absent, which it tolerates (the readiness probe
// releases the node). warmup replaces WARMUP_SECONDS.
func ExampleInit(manifest []byte, warmup string) ([]client.Object, error) {
	dec := utilyaml.NewDocumentDecoder(io.NopCloser(bytes.NewReader(manifest)))
	buf := make([]byte, len(manifest))
	var objs []client.Object
	for {
		n, err := dec.Read(buf)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		doc := buf[:n]
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, err
		}
		var obj client.Object
		switch meta.Kind {
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "DaemonSet":
			obj = &appsv1.DaemonSet{}
		default:
			return nil, fmt.Errorf("the init DaemonSet's manifest has a %s, which a real node's test does not install", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", meta.Kind, err)
		}
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			localInit(ds, warmup)
		}
		objs = append(objs, obj)
	}
}

// localInit points the init container at the local image and sets its warm-up.
func localInit(ds *appsv1.DaemonSet, warmup string) {
	c := &ds.Spec.Template.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = ToolsImage, corev1.PullNever
	for i := range c.Env {
		if c.Env[i].Name == "WARMUP_SECONDS" {
			c.Env[i].Value = warmup
		}
	}
}

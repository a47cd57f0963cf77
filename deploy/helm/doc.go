// Package helm holds the tests of the startupgate Helm chart (startupgate/): it renders the
// chart with the Helm Go SDK and proves it equal to the kustomize install in ../overlays.
//
// It is a Go module of its own so that Helm never enters the gate's dependencies: the root
// module (and so bin/gate) does not require helm.sh/helm, and no go.work joins the two.
package helm

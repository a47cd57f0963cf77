// Package deploy embeds the shipped manifests, so that the simulator and the tests install
// exactly the files operators apply — not a copy that could drift from them.
package deploy

import "embed"

// FS holds base/, overlays/, examples/ and startup-daemonset.yaml.
//
//go:embed base overlays examples startup-daemonset.yaml
var FS embed.FS

// Package config is the gate's configuration: the contract's defaults, the Config type with
// its rules, strict decoding of the versioned file, and validation. It holds types and pure
// functions only and imports no client, so that the simulator's checks, `gate convert` and
// the docs generator can depend on the configuration without the controller.
package config

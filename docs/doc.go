// Package docs holds the project's documentation. It has no code of its own: its tests
// generate the reference pages under docs/reference from the Go source and check that
// every relative link in the README and the docs leads somewhere, so that the docs cannot
// drift from the code unnoticed.
package docs

// Package layers holds only a test: TestImportsFollowTheLayers checks the
// module's imports against the layers docs/architecture.md states.
package layers

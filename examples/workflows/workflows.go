// Package workflows holds the example workflow definitions, one file per
// version (NAME/vVERSION.json) as under the repository's workflows/. The
// functions embed them, and a stage runs one only when it names it
// (context workflows; `make run` and the LocalStack end-to-end test do).
package workflows

import "embed"

// FS holds every example definition.
//
//go:embed */*.json
var FS embed.FS

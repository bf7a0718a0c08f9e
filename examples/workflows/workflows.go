// Package workflows holds the example workflow definitions, one file per
// version (NAME/vVERSION.json) as under the repository's workflows/. The
// CLI, the local engine and the tests embed them; the functions only when
// built with them (make build EXAMPLES=1, without -tags noexamples). A
// stage runs one only when it names it (context workflowsDir; `make run`
// and the LocalStack end-to-end test do).
package workflows

import "embed"

// FS holds every example definition.
//
//go:embed */*.json
var FS embed.FS

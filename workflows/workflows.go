// Package workflows holds the workflow definitions this repository ships,
// one file per version (NAME/vVERSION.json), and the JSON Schema of their
// format (workflow.schema.json). The functions embed them, so a binary
// runs exactly the definitions it was built with; package
// internal/definition reads and checks them.
package workflows

import "embed"

// FS holds every definition and the format's schema.
//
//go:embed workflow.schema.json */*.json
var FS embed.FS

// SchemaFile is the format's JSON Schema, in FS and under workflows/.
const SchemaFile = "workflow.schema.json"

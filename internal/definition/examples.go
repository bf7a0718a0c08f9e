//go:build !noexamples

package definition

import exampleflows "orderly/examples/workflows"

// exampleSource is the examples, built in: the CLI, the local engine, the
// tools and the tests run them, and so do the functions of a stage that
// names one (make build EXAMPLES=1).
var exampleSource = &source{dir: "examples/workflows", fsys: exampleflows.FS}

// notBuiltIn says what the binary embeds, to a stage naming a workflow it
// lacks.
const notBuiltIn = "which embeds workflows/ and examples/workflows/ as they were when it was built " +
	"(after adding a workflow, build again: make cli, make build)"

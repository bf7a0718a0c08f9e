//go:build noexamples

package definition

// exampleSource is nil: this binary was built without the examples, as
// make build builds the functions unless EXAMPLES=1, so that a Lambda
// does not carry workflows its stage does not run.
var exampleSource *source

// notBuiltIn says what the binary embeds, and how a stage that names an
// example gets it built in.
const notBuiltIn = "which was built without the examples (-tags noexamples) and embeds workflows/ as it was then: " +
	"for an example under examples/workflows/, build the functions with them (make build EXAMPLES=1, for LocalStack make build-host EXAMPLES=1); " +
	"after adding a workflow, build again (make build)"

package definition_test

import (
	"os"
	"testing"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// BenchmarkLoadEmbedded is what a function's start and synth pay for the
// definitions built in: Load (Parse and check every file) and Build.
func BenchmarkLoadEmbedded(b *testing.B) {
	for b.Loop() {
		shipped, examples, err := definition.Embedded()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := definition.Build(append(shipped, examples...), definition.ShippedWorkflow, order.DefaultTiming); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseExpressions is one definition with four expressions
// (testdata/expr.json): each step that has one builds its environment
// and compiles it, in Parse and again in Workflow.
func BenchmarkParseExpressions(b *testing.B) {
	data, err := os.ReadFile("testdata/expr.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		def, err := definition.Parse("expr.json", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := def.Workflow(order.DefaultTiming); err != nil {
			b.Fatal(err)
		}
	}
}

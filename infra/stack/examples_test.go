package stack_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"orderly/infra/stack"
)

// Synth deploys an example only to functions built with the examples:
// make build leaves them out (-tags noexamples) unless EXAMPLES=1, and a
// function refuses a workflow it was built without.
func TestSynthRefusesAnExampleTheFunctionsLack(t *testing.T) {
	// bootstraps builds a stand-in function binary with tags into a
	// directory of assets of its own.
	bootstraps := func(tags string) string {
		dir := t.TempDir()
		cmd := exec.Command("go", "build", "-tags", tags, "-o", filepath.Join(dir, "scheduler", "bootstrap"), "./testdata/bootstrap")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return dir
	}
	shipped := filepath.Join("..", "..", "workflows")
	withExamples := shipped + "," + filepath.Join("..", "..", "examples", "workflows")
	example := filepath.Join("..", "..", "examples", "workflows", "checkout", "v1.json") + ": is an example"
	tests := []struct {
		name      string
		workflows string
		assets    string
		want      []string // in the error; none: synth goes on
	}{
		{name: "make build", workflows: withExamples, assets: filepath.Join("..", "..", "bin"), want: []string{example, "make build EXAMPLES=1"}},
		{name: "built without", workflows: withExamples, assets: bootstraps("lambda.norpc,noexamples"), want: []string{example, "make build EXAMPLES=1"}},
		{name: "built with", workflows: withExamples, assets: bootstraps("lambda.norpc")},
		{name: "none built", workflows: withExamples, assets: t.TempDir(), want: []string{"no function binaries", "make build EXAMPLES=1"}},
		{name: "no example", workflows: shipped, assets: t.TempDir()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"),
				stack.CtxWorkflowsDir: tt.workflows, stack.CtxAssetsDir: tt.assets}
			p, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("FromContext = %v, want it to say %q", err, w)
				}
			}
			if tt.want != nil {
				return
			}
			if err != nil {
				t.Fatalf("FromContext: %v", err)
			}
			if _, got := p.Workflows.Get("checkout", "1"); got != (tt.workflows == withExamples) {
				t.Errorf("workflows %v: checkout deployed %t, want %t", p.Workflows.Known(), got, !got)
			}
		})
	}
}

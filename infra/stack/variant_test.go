package stack_test

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"orderly/infra/stack"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// variant is a stack synthesized for one shape of the shipped workflow,
// for a test of what some workflows add (callbacks, polls, conditions).
type variant struct {
	props     stack.Props
	stack     *stack.Stack
	template  assertions.Template
	resources map[string]map[string]any
}

// synthVariant synthesizes, as stack id, the stack of the shipped
// workflow as shape leaves it, from the tests' own context (a stage
// whose services are all at one local URL) and extra, with cdk-nag's
// checks on (see nagErrors).
func synthVariant(t *testing.T, id string, extra map[string]any, shape func(*order.Workflow)) variant {
	t.Helper()
	p, app := variantProps(t, extra)
	w := p.Workflows.Latest()
	w.Steps = slices.Clone(w.Steps)
	shape(&w)
	p.Workflows, p.WorkflowsDigest = order.MustVersions(w), ""
	s, err := stack.New(app, id, p)
	if err != nil {
		t.Fatal(err)
	}
	stack.Check(app)
	v := variant{props: p, stack: s, template: assertions.Template_FromStack(s.Stack, nil)}
	raw, _ := json.Marshal(v.template.ToJSON())
	var doc struct{ Resources map[string]map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	v.resources = doc.Resources
	return v
}

// variantProps reads the props of a variant's context, the tests' own
// plus extra: its error, for a test of a context's refusal.
func variantProps(t *testing.T, extra map[string]any) (stack.Props, awscdk.App) {
	t.Helper()
	p, app, err := variantContext(extra)
	if err != nil {
		t.Fatal(err)
	}
	return p, app
}

// variantContext is variantProps' reading, with its error.
func variantContext(extra map[string]any) (stack.Props, awscdk.App, error) {
	ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"),
		stack.CtxWorkflowsDir: filepath.Join("..", "..", "workflows"), stack.CtxAssetsDir: filepath.Join("..", "..", "bin"),
		stack.CtxRemoteURL: "http://127.0.0.1:8081"}
	maps.Copy(ctx, extra)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	p, err := stack.FromContext(app)
	return p, app, err
}

// ofType returns v's resources of type typ, by logical id.
func (v variant) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range v.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// nagErrors reports each error cdk-nag found in v's stack.
func (v variant) nagErrors(t *testing.T) {
	t.Helper()
	errs := assertions.Annotations_FromStack(v.stack.Stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("(AwsSolutions|Serverless)-.*")))
	for _, e := range *errs {
		//lint:ignore SA1019 the assertions package still returns this type; its replacement has no Go binding yet
		t.Errorf("cdk-nag: %s: %v", *e.Id, e.Entry.Data)
	}
}

// chargeCallsBack makes the shipped workflow's payment a service that
// calls back.
func chargeCallsBack(w *order.Workflow) {
	i, _ := w.Index(ordertest.StepChargePayment)
	w.Steps[i].Callback = &order.CallbackWait{Timeout: time.Hour}
}

package stack_test

import (
	"encoding/json"
	"github.com/aws/jsii-runtime-go"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"orderly/infra/stack"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
)

// The callback key is read by the submission function, which opens the
// tokens of callbacks, and by the agents of steps that call back, which
// seal them and are told the API's callback URL; by no other function,
// and by none where no step calls back.
func TestOnlyTheAgentsOfStepsThatCallBackReadTheCallbackKey(t *testing.T) {
	key := "secret:" + resources.New(synthesizedStage, nil).CallbackSecret
	for id, r := range ofType("AWS::IAM::Policy") {
		if policy, _ := json.Marshal(props(r)["PolicyDocument"]); strings.Contains(string(policy), key) {
			t.Errorf("%s reads the callback key in a stage whose steps never call back", logicalName(id))
		}
	}
	for _, fn := range ofType("AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[resources.EnvCallbackSecret] != nil || vars[resources.EnvCallbackURL] != nil {
			t.Errorf("%v is given the callback key or URL in a stage whose steps never call back", props(fn)["FunctionName"])
		}
	}

	ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"),
		stack.CtxWorkflowsDir: filepath.Join("..", "..", "workflows"), stack.CtxAssetsDir: filepath.Join("..", "..", "bin"),
		stack.CtxRemoteURL: "http://127.0.0.1:8081"}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	p, err := stack.FromContext(app)
	if err != nil {
		t.Fatal(err)
	}
	w := p.Workflows.Latest()
	w.Steps = slices.Clone(w.Steps)
	i, _ := w.Index(ordertest.StepChargePayment)
	w.Steps[i].Callback = &order.CallbackWait{Timeout: time.Hour}
	p.Workflows, p.WorkflowsDigest = order.MustVersions(w), ""
	s, err := stack.New(app, "Orderly-callback", p)
	if err != nil {
		t.Fatal(err)
	}
	// The callbacks' route takes no IAM identity (its token allows a
	// callback), and cdk-nag's objections to that are answered.
	template := assertions.Template_FromStack(s.Stack, nil)
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::Method"), map[string]any{
		"HttpMethod": "POST", "AuthorizationType": "NONE"})
	errs := assertions.Annotations_FromStack(s.Stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("(AwsSolutions|Serverless)-.*")))
	for _, e := range *errs {
		//lint:ignore SA1019 the assertions package still returns this type; its replacement has no Go binding yet
		t.Errorf("cdk-nag: %s: %v", *e.Id, e.Entry.Data)
	}
	raw, _ := json.Marshal(template.ToJSON())
	var doc struct{ Resources map[string]map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	key = "secret:" + resources.New(p.Stage, nil).CallbackSecret + "-??????"
	readers := map[string]bool{}
	for id, r := range doc.Resources {
		if r["Type"] != "AWS::IAM::Policy" {
			continue
		}
		if policy, _ := json.Marshal(props(r)["PolicyDocument"]); strings.Contains(string(policy), key) {
			readers[strings.TrimSuffix(logicalName(id), "DefaultPolicy")] = true
		}
	}
	if want := map[string]bool{"SubmitRole": true, "AgentPaymentRole": true}; !maps.Equal(readers, want) {
		t.Errorf("roles reading the callback key: %v, want %v", readers, want)
	}
	for _, r := range doc.Resources {
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		name, _ := props(r)["FunctionName"].(string)
		vars, _ := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		secret, url := vars[resources.EnvCallbackSecret], vars[resources.EnvCallbackURL]
		switch {
		case strings.HasSuffix(name, "-payment-agent"):
			u, _ := json.Marshal(url)
			if secret == nil || !strings.Contains(string(u), "callbacks") || !strings.Contains(string(u), "Api") {
				t.Errorf("%s: %s %v, %s %s; want the key and the API's callback URL", name, resources.EnvCallbackSecret, secret, resources.EnvCallbackURL, u)
			}
		case strings.HasSuffix(name, "-submit"):
			if secret == nil || url != nil {
				t.Errorf("%s: %v, %v; want the key alone", name, secret, url)
			}
		default:
			if secret != nil || url != nil {
				t.Errorf("%s is given the callback key or URL: %v, %v", name, secret, url)
			}
		}
	}
}

package stack_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"orderly/internal/resources"
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

	v := synthVariant(t, "Orderly-callback", nil, chargeCallsBack)
	p := v.props
	// The callbacks' route takes no IAM identity (its token allows a
	// callback), and cdk-nag's objections to that are answered.
	v.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Method"), map[string]any{
		"HttpMethod": "POST", "AuthorizationType": "NONE"})
	v.nagErrors(t)
	doc := struct{ Resources map[string]map[string]any }{v.resources}
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

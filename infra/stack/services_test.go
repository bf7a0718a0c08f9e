package stack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"orderly/infra/stack"
	"orderly/internal/adapter/services"
	"orderly/internal/testkit/ordertest"
)

// Targets of the role check's SigV4 services (nothing is called there:
// the scenarios sign for them and call the simulator).
const (
	roleCheckKey      = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	roleCheckAPIStage = "arn:aws:execute-api:us-east-1:111122223333:a1b2c3d4e5/live"
	roleCheckFunction = "arn:aws:lambda:us-east-1:111122223333:function:orderly-shipping"
)

// roleCheckServices is the synthesized stage's services, one of each
// authentication: inventory's header from a secret encrypted with a
// customer managed key, payment's API Gateway API and shipping's function
// URL, both signed. url, when set, is where the scenarios' services are.
func roleCheckServices(stage, url string) services.Config {
	at := func(real string) string {
		if url != "" {
			return url
		}
		return real
	}
	return services.Config{
		ordertest.AgentInventory: {URL: at("https://inventory.example.com"), Auth: services.Auth{Type: services.AuthHeader, Header: "X-Api-Key",
			Secret: "orderly-" + stage + "-inventory-api-key", KMSKey: roleCheckKey}},
		ordertest.AgentPayment: {URL: at("https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/live"),
			Auth: services.Auth{Type: services.AuthSigV4, Service: services.SigningExecuteAPI, Target: roleCheckAPIStage}},
		ordertest.AgentShipping: {URL: at("https://abcdefghij0123456789abcdefghij01.lambda-url.us-east-1.on.aws"),
			Auth: services.Auth{Type: services.AuthSigV4, Service: services.SigningLambda, Target: roleCheckFunction}},
	}
}

// Each agent is handed its own service, and only its own: the URL and
// authentication its main reads.
func TestAgentsGetOnlyTheirOwnService(t *testing.T) {
	want := roleCheckServices(synthesizedStage, "")
	seen := 0
	for _, fn := range ofType("AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		agent, _ := vars["AGENT_NAME"].(string)
		if agent == "" {
			if vars[services.EnvURL] != nil || vars[services.EnvAuth] != nil {
				t.Errorf("function %v, not an agent, is given a service", props(fn)["FunctionName"])
			}
			continue
		}
		seen++
		url, _ := vars[services.EnvURL].(string)
		auth, _ := vars[services.EnvAuth].(string)
		got, err := services.ParseService(url, auth)
		if err != nil {
			t.Errorf("agent %s: %v", agent, err)
		}
		if got != want[agent] {
			t.Errorf("agent %s is given %+v, want %+v", agent, got, want[agent])
		}
	}
	if seen != len(want) {
		t.Errorf("%d agents, want %d", seen, len(want))
	}
}

// The services' grants, statement by statement: the condition each needs,
// and for an API, each method and path the workflows call.
func TestServiceGrantsAreExactlyTheCallsTheirStepsMake(t *testing.T) {
	type statement struct {
		Action    any
		Resource  any
		Condition any
	}
	want := map[string][]string{
		"AgentInventoryRole": {`secretsmanager:GetSecretValue on {"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":secretsmanager:",{"Ref":"AWS::Region"},":",{"Ref":"AWS::AccountId"},":secret:orderly-` + synthesizedStage + `-inventory-api-key-??????"]]} if null`,
			`kms:Decrypt on "` + roleCheckKey + `" if {"StringEquals":{"kms:ViaService":{"Fn::Join":["",["secretsmanager.",{"Ref":"AWS::Region"},".amazonaws.com"]]}}}`},
		"AgentPaymentRole": {`execute-api:Invoke on ["` + roleCheckAPIStage + `/POST/payment/charges","` + roleCheckAPIStage + `/POST/payment/refunds"] if null`},
		"AgentShippingRole": {`lambda:InvokeFunctionUrl on "` + roleCheckFunction + `" if {"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`,
			// Function URLs made since October 2025 need InvokeFunction too,
			// granted only for calls through the URL.
			`lambda:InvokeFunction on "` + roleCheckFunction + `" if {"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`},
	}
	got := map[string][]string{}
	for _, p := range ofType("AWS::IAM::Policy") {
		pp := props(p)
		role := logicalName(pp["Roles"].([]any)[0].(map[string]any)["Ref"].(string))
		raw, _ := json.Marshal(pp["PolicyDocument"].(map[string]any)["Statement"])
		var sts []statement
		json.Unmarshal(raw, &sts)
		for _, st := range sts {
			action, _ := st.Action.(string)
			// The agents' grants (the submission function reads a secret of
			// the stack's own: its page token key).
			if !strings.HasPrefix(role, "Agent") || !strings.HasPrefix(action, "secretsmanager:") && !strings.HasPrefix(action, "execute-api:") &&
				!strings.HasPrefix(action, "lambda:") && action != "kms:Decrypt" {
				continue
			}
			res, _ := json.Marshal(st.Resource)
			cond, _ := json.Marshal(st.Condition)
			got[role] = append(got[role], action+" on "+string(res)+" if "+string(cond))
		}
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("service grants:\n%s\nwant:\n%s", g, w)
	}
}

// Synth refuses a services configuration it cannot deploy, naming each
// problem; a service not listed falls back to remoteUrl only when that is
// a loopback URL.
func TestServicesFromContext(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"),
			stack.CtxWorkflowsDir: filepath.Join("..", "..", "workflows"), stack.CtxAssetsDir: filepath.Join("..", "..", "bin")}
		for k, v := range extra {
			ctx[k] = v
		}
		return ctx
	}
	for _, tt := range []struct {
		name    string
		ctx     map[string]any
		wantErr string // a line of the error; "" for none
	}{
		{"a JSON string from -c, the rest at a loopback remoteUrl", map[string]any{
			stack.CtxServices:  `{"payment": {"url": "https://pay.example.com", "auth": {"type": "header", "header": "X-Api-Key", "secret": "pay"}}}`,
			stack.CtxRemoteURL: "http://127.0.0.1:8091"}, ""},
		{"an object from cdk.json", map[string]any{stack.CtxServices: map[string]any{
			"inventory": map[string]any{"url": "http://localhost:9000", "auth": map[string]any{"type": "none"}},
			"payment":   map[string]any{"url": "http://localhost:9000", "auth": map[string]any{"type": "none"}},
			"shipping":  map[string]any{"url": "http://localhost:9000", "auth": map[string]any{"type": "none"}}}}, ""},
		{"an unknown field", map[string]any{stack.CtxServices: `{"payment": {"url": "https://pay.example.com", "auth": {"type": "header", "header": "X-Api-Key", "secret": "pay", "ttl": 5}}}`},
			`context services: payment.auth.ttl: not a field of a "header" authentication (it takes type, header, secret, kmsKey)`},
		{"an unauthenticated remote fallback", map[string]any{stack.CtxRemoteURL: "https://remote.example.com"},
			`context services: inventory: not configured, and context remoteUrl "https://remote.example.com" is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth`},
		{"a misspelt service", map[string]any{stack.CtxRemoteURL: "http://127.0.0.1:8091",
			stack.CtxServices: `{"paymnet": {"url": "https://pay.example.com", "auth": {"type": "header", "header": "X-Api-Key", "secret": "pay"}}}`},
			`context services: paymnet: no workflow calls a service "paymnet" (they call inventory, payment, shipping)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := base(tt.ctx)
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
			p, err := stack.FromContext(app)
			if err == nil {
				_, err = stack.New(app, "Orderly-services", p)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want a line %s", err, tt.wantErr)
			}
		})
	}
}

// cdk.json's own services (which the other tests replace) are a
// configuration synth takes for the shipped workflows.
func TestCDKJSONServicesAreValid(t *testing.T) {
	var cdkJSON struct{ Context map[string]any }
	raw, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err == nil {
		err = json.Unmarshal(raw, &cdkJSON)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := cdkJSON.Context
	ctx[stack.CtxPricesFile] = filepath.Join("..", "..", "cost", "prices.json")
	ctx[stack.CtxWorkflowsDir] = filepath.Join("..", "..", "workflows")
	p, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Services.Resolve(p.Workflows.Agents(), p.RemoteURL, "context services", "context remoteUrl"); err != nil {
		t.Error(err)
	}
}

package stack_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"orderly/infra/stack"
	"orderly/internal/resources"
)

// The agents of steps that call back tell services the API's own
// callback URL, or the callbackUrl context's with the API's id and stage
// put in: LocalStack's API is reached by path, on a host its own URL does
// not name. A URL that would carry tokens in the clear beyond this
// machine, is no URL, or names a placeholder there is not, is refused.
func TestTheCallbackURLCanBeSetForAGatewayReachedByPath(t *testing.T) {
	for _, tt := range []struct {
		name, url string
		// want matches the payment agent's CALLBACK_URL as JSON.
		want    string
		wantErr string
	}{
		{name: "the API's own", want: `execute-api.*/callbacks`},
		{name: "LocalStack's path form", url: "http://127.0.0.1:4566/_aws/execute-api/{apiId}/{stage}/callbacks",
			want: `^\{"Fn::Join":\["",\["http://127\.0\.0\.1:4566/_aws/execute-api/",\{"Ref":"Api[0-9A-F]{8}"\},"/callback-url/callbacks"\]\]\}$`},
		{name: "a domain of its own", url: "https://orders.example.com/callbacks", want: `^"https://orders\.example\.com/callbacks"$`},
		{name: "plain http beyond this machine", url: "http://orders.example.com/callbacks", wantErr: "https"},
		{name: "no URL", url: "127.0.0.1:4566/callbacks", wantErr: "callbackUrl"},
		{name: "an unknown placeholder", url: "https://orders.example.com/{apiID}/callbacks", wantErr: "{apiID}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]any{stack.CtxStage: "callback-url"}
			if tt.url != "" {
				extra[stack.CtxCallbackURL] = tt.url
			}
			if tt.wantErr != "" {
				if _, _, err := variantContext(extra); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromContext: %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			doc := struct{ Resources map[string]map[string]any }{synthVariant(t, "Orderly-callback-url", extra, chargeCallsBack).resources}
			found := false
			for _, r := range doc.Resources {
				if name, _ := props(r)["FunctionName"].(string); r["Type"] != "AWS::Lambda::Function" || !strings.HasSuffix(name, "-payment-agent") {
					continue
				}
				found = true
				vars, _ := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
				got, _ := json.Marshal(vars[resources.EnvCallbackURL])
				if !regexp.MustCompile(tt.want).Match(got) {
					t.Errorf("%s %s, want a match of %s", resources.EnvCallbackURL, got, tt.want)
				}
			}
			if !found {
				t.Fatal("no payment agent in the template")
			}
		})
	}
}

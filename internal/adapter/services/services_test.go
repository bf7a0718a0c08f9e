package services_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"orderly/internal/adapter/services"
)

func TestParseAcceptsEachAuthentication(t *testing.T) {
	raw := `{
	  "inventory": {"url": "https://inventory.example.com/", "auth": {"type": "header", "header": "X-Api-Key", "secret": "orderly/prod/inventory"}},
	  "payment": {"url": "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/live", "auth": {"type": "sigv4", "service": "execute-api", "target": "arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/live"}},
	  "shipping": {"url": "https://abc.lambda-url.eu-west-1.on.aws", "auth": {"type": "sigv4", "service": "lambda", "target": "arn:aws:lambda:eu-west-1:111122223333:function:ship"}},
	  "fraud": {"url": "http://127.0.0.1:8091", "auth": {"type": "none"}},
	  "ledger": {"url": "https://ledger.internal", "auth": {"type": "none", "allowRemote": true}},
	  "tax": {"url": "https://tax.example.com", "auth": {"type": "header", "header": "Authorization",
	          "secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:tax-token-AbCdEf", "kmsKey": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}}
	}`
	got, err := services.Parse("services.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := services.Config{
		"inventory": {URL: "https://inventory.example.com", Auth: services.Auth{Type: "header", Header: "X-Api-Key", Secret: "orderly/prod/inventory"}},
		"payment": {URL: "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/live", Auth: services.Auth{Type: "sigv4", Service: "execute-api",
			Target: "arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/live"}},
		"shipping": {URL: "https://abc.lambda-url.eu-west-1.on.aws", Auth: services.Auth{Type: "sigv4", Service: "lambda", Target: "arn:aws:lambda:eu-west-1:111122223333:function:ship"}},
		"fraud":    {URL: "http://127.0.0.1:8091", Auth: services.Auth{Type: "none"}},
		"ledger":   {URL: "https://ledger.internal", Auth: services.Auth{Type: "none", AllowRemote: true}},
		"tax": {URL: "https://tax.example.com", Auth: services.Auth{Type: "header", Header: "Authorization",
			Secret: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:tax-token-AbCdEf", KMSKey: "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if r := got["shipping"].Auth.Region(); r != "eu-west-1" {
		t.Errorf("shipping's region: got %q, want eu-west-1", r)
	}
	// A secret is named without its account wherever it is shown.
	if n := got["tax"].Auth.SecretName(); n != "tax-token-AbCdEf" {
		t.Errorf("tax's secret name: got %q, want tax-token-AbCdEf", n)
	}
}

func TestParseNamesEveryProblemWithItsField(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []string // each a line of the error
	}{
		{"not an object", `[]`, []string{"f.json: must be an object, not an array"}},
		{"not JSON", `{"a": `, []string{"f.json: a: is not valid JSON: ends too early"}},
		{"bad name", `{"Pay": {"url": "http://127.0.0.1:1", "auth": {"type": "none"}}}`,
			[]string{`f.json: Pay: not a service name: want lower-case letters, digits and "-", as a step's "service"`}},
		{"repeated service", `{"a": {"url": "http://127.0.0.1:1", "auth": {"type": "none"}}, "a": {"url": "http://127.0.0.1:2", "auth": {"type": "none"}}}`,
			[]string{"f.json: a: repeated key; each key once"}},
		{"unknown and missing fields", `{"a": {"uri": "x"}}`, []string{
			`f.json: a.uri: unknown field; a service has "url" and "auth"`,
			"f.json: a.url: is required: the service's base URL",
			`f.json: a.auth: is required: {"type": "none"} (loopback only), "header" or "sigv4"`}},
		{"wrong types", `{"a": {"url": 5, "auth": {"type": "none", "allowRemote": "yes"}}}`, []string{
			"f.json: a.url: must be a string, not a number",
			"f.json: a.auth.allowRemote: must be true or false, not a string"}},
		{"nulls", `{"a": {"url": null, "auth": {"type": "none", "allowRemote": null}}}`, []string{
			"f.json: a.url: must be a string, not null",
			"f.json: a.auth.allowRemote: must be true or false, not null"}},
		{"a cut-off document, where it ends", `{"a": {"url": "http://127.0.0.1:1", "auth": {"type": `,
			[]string{"f.json: a.auth.type: is not valid JSON: ends too early"}},
		{"unknown type", `{"a": {"url": "http://127.0.0.1:1", "auth": {"type": "basic", "user": "u"}}}`, []string{
			`f.json: a.auth.type: "basic": unknown, want "none", "header" or "sigv4"`,
			"f.json: a.auth.user: unknown field"}},
		{"no type", `{"a": {"url": "http://127.0.0.1:1", "auth": {}}}`, []string{`f.json: a.auth.type: is required: "none", "header" or "sigv4"`}},
		{"a field of another type", `{"a": {"url": "https://a.example.com", "auth": {"type": "header", "header": "X-Key", "secret": "s", "target": "arn:x"}}}`,
			[]string{`f.json: a.auth.target: not a field of a "header" authentication (it takes type, header, secret, kmsKey)`}},
		{"header incomplete", `{"a": {"url": "https://a.example.com", "auth": {"type": "header"}}}`, []string{
			`f.json: a.auth.header: is required: the header that carries the secret's value ("X-Api-Key", "Authorization")`,
			"f.json: a.auth.secret: is required: the Secrets Manager secret (its name, or its full ARN) whose value is the header's"}},
		{"header reserved and bad secret", `{"a": {"url": "https://a.example.com", "auth": {"type": "header", "header": "Idempotency-Key", "secret": "no spaces"}}}`, []string{
			`f.json: a.auth.header: "Idempotency-Key": set by the client itself; choose another header`,
			`f.json: a.auth.secret: "no spaces": not a secret name (letters, digits and /_+=.@-) nor an ARN`}},
		{"not a header name", `{"a": {"url": "https://a.example.com", "auth": {"type": "header", "header": "X Key", "secret": "s"}}}`,
			[]string{`f.json: a.auth.header: "X Key": not an HTTP header name`}},
		{"ARNs of the wrong kind", `{"a": {"url": "https://a.example.com", "auth": {"type": "header", "header": "X-Key",
			"secret": "arn:aws:ssm:us-east-1:111122223333:parameter/x", "kmsKey": "arn:aws:kms:us-east-1:111122223333:alias/x"}}}`, []string{
			"f.json: a.auth.secret: an ARN of ssm, want one of secretsmanager",
			"f.json: a.auth.kmsKey: the ARN's resource must be key/KEY_ID (a key's ARN; an alias cannot be granted)"}},
		{"sigv4 incomplete", `{"a": {"url": "https://a.example.com", "auth": {"type": "sigv4"}}}`,
			[]string{`f.json: a.auth.service: is required: "lambda" (a function URL with AWS_IAM auth) or "execute-api" (API Gateway with IAM authorization)`}},
		{"sigv4 unknown service", `{"a": {"url": "https://a.example.com", "auth": {"type": "sigv4", "service": "s3", "target": "arn:aws:s3:::b"}}}`,
			[]string{`f.json: a.auth.service: "s3": unknown, want "lambda" or "execute-api"`}},
		{"sigv4 without target", `{"a": {"url": "https://a.example.com", "auth": {"type": "sigv4", "service": "lambda"}}}`,
			[]string{"f.json: a.auth.target: is required: the ARN the agent is granted to invoke (function:NAME, or function:NAME:ALIAS)"}},
		{"sigv4 targets too wide", `{"a": {"url": "https://a.example.com", "auth": {"type": "sigv4", "service": "execute-api", "target": "arn:aws:execute-api:us-east-1:111122223333:a1b2c3d4e5/*"}},
			 "b": {"url": "https://b.example.com", "auth": {"type": "sigv4", "service": "lambda", "target": "arn:aws:lambda:us-east-1:111122223333:function:*"}}}`, []string{
			"f.json: a.auth.target: the ARN's resource must be API_ID/STAGE (the API's stage; each call's method and path are granted under it)",
			"f.json: b.auth.target: the ARN's resource must be function:NAME, or function:NAME:ALIAS"}},
		{"not an ARN", `{"a": {"url": "https://a.example.com", "auth": {"type": "sigv4", "service": "lambda", "target": "ship"}}}`,
			[]string{"f.json: a.auth.target: not an ARN (arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME, or function:NAME:ALIAS)"}},
		{"plain http outside loopback", `{"a": {"url": "http://a.example.com", "auth": {"type": "header", "header": "X-Key", "secret": "s"}}}`,
			[]string{`f.json: a.url: "http://a.example.com": must be https (plain http only for a loopback host)`}},
		{"none outside loopback", `{"a": {"url": "https://a.example.com", "auth": {"type": "none"}}}`,
			[]string{`f.json: a.auth: calls to a.example.com would carry no credential: use a "header" or "sigv4" authentication, or set "allowRemote": true for a service reachable only inside a private network`}},
		{"URL with a credential", `{"a": {"url": "https://u:p@a.example.com", "auth": {"type": "none", "allowRemote": true}}}`,
			[]string{"f.json: a.url: must not carry a user or password; use a header authentication"}},
		{"URL with a query", `{"a": {"url": "https://a.example.com/?k=v", "auth": {"type": "none", "allowRemote": true}}}`,
			[]string{"f.json: a.url: must not have a query or fragment: a step's path is appended to it"}},
		{"the URL's problems with the authentication's", `{"a": {"url": "http://a.example.com", "auth": {"type": "header", "header": "X-Key"}}}`, []string{
			"f.json: a.auth.secret: is required: the Secrets Manager secret (its name, or its full ARN) whose value is the header's",
			`f.json: a.url: "http://a.example.com": must be https (plain http only for a loopback host)`}},
		{"not a URL", `{"a": {"url": "a.example.com", "auth": {"type": "none"}}}`,
			[]string{`f.json: a.url: "a.example.com": not an http(s) URL with a host`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.Parse("f.json", []byte(tc.raw))
			var ps services.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("got %v, want Problems", err)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestParseServiceReadsAnAgentsEnvironment(t *testing.T) {
	got, err := services.ParseService("https://pay.example.com/", `{"type":"header","header":"X-Api-Key","secret":"pay"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := (services.Service{URL: "https://pay.example.com", Auth: services.Auth{Type: "header", Header: "X-Api-Key", Secret: "pay"}}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	_, err = services.ParseService("https://pay.example.com", `{"type":"none"}`)
	if want := "environment: ORDERLY_SERVICE_AUTH: calls to pay.example.com would carry no credential"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want an error starting %q", err, want)
	}
	_, err = services.ParseService("", ``)
	if want := "environment: ORDERLY_SERVICE_AUTH: is not valid JSON: ends too early\nenvironment: ORDERLY_SERVICE_URL: is required: the service's base URL"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	// The variable carries what Auth.JSON writes.
	a := services.Auth{Type: "sigv4", Service: "lambda", Target: "arn:aws:lambda:us-east-1:111122223333:function:f"}
	if got, err := services.ParseService("https://f.example.com", a.JSON()); err != nil || got.Auth != a {
		t.Errorf("round trip: got %+v, %v, want %+v", got.Auth, err, a)
	}
}

func TestResolveGivesEveryServiceOneConfiguration(t *testing.T) {
	listed := services.Config{"payment": {URL: "https://pay.example.com", Auth: services.Auth{Type: "header", Header: "X-Key", Secret: "pay"}}}
	got, err := listed.Resolve([]string{"inventory", "payment"}, "http://127.0.0.1:8091/", "context services", "context remoteUrl")
	if err != nil {
		t.Fatal(err)
	}
	want := services.Config{"payment": listed["payment"], "inventory": {URL: "http://127.0.0.1:8091", Auth: services.Auth{Type: "none"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		name, fallback string
		listed         services.Config
		want           string
	}{
		{"no fallback", "", nil,
			"context services: inventory: not configured: give the service's url and auth (or, for loopback services, set context remoteUrl)"},
		{"a remote fallback", "https://remote.example.com", nil,
			`context services: inventory: not configured, and context remoteUrl "https://remote.example.com" is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth`},
		{"a service no workflow calls", "http://127.0.0.1:1", services.Config{"paymnet": listed["payment"]},
			"context services: paymnet: no workflow calls a service \"paymnet\" (they call inventory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.listed.Resolve([]string{"inventory"}, tc.fallback, "context services", "context remoteUrl")
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

package stack_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// A stage whose service calls back takes callbacks from services inside
// AWS on POST /callbacks/iam, IAM-authorized as every method but POST
// /callbacks is, and the CallbackPolicy (output CallbackPolicyArn) lets a
// service's role invoke that method of this stage and nothing else;
// cdk-nag finds nothing to object to. A stage whose steps never call back
// has neither.
func TestServicesInsideAWSCallBackSignedOnTheirOwnRoute(t *testing.T) {
	for _, r := range ofType("AWS::ApiGateway::Resource") {
		if props(r)["PathPart"] == "callbacks" {
			t.Error("a stage whose steps never call back has a callbacks route")
		}
	}
	for id := range ofType("AWS::IAM::ManagedPolicy") {
		if strings.HasPrefix(id, "CallbackPolicy") {
			t.Error("a stage whose steps never call back has a callback policy")
		}
	}
	if outs := *template.FindOutputs(jsii.String("CallbackPolicyArn"), nil); len(outs) != 0 {
		t.Errorf("a stage whose steps never call back outputs %v", outs)
	}

	v := synthVariant(t, "Orderly-callback-iam", nil, chargeCallsBack)
	p, tpl, of := v.props, v.template, v.ofType
	v.nagErrors(t)

	// The routes: /callbacks unsigned (its token allows it), and under
	// it /iam, signed.
	pathOf := map[string]string{}
	for id, r := range of("AWS::ApiGateway::Resource") {
		parent, _ := json.Marshal(props(r)["ParentId"])
		pathOf[id] = string(parent) + "/" + props(r)["PathPart"].(string)
	}
	auth := map[string]any{}
	for _, m := range of("AWS::ApiGateway::Method") {
		ref, _ := props(m)["ResourceId"].(map[string]any)["Ref"].(string)
		path := pathOf[ref]
		if strings.HasSuffix(path, "/callbacks") || strings.HasSuffix(path, "/iam") {
			auth[props(m)["HttpMethod"].(string)+" "+path[strings.LastIndex(path, "/"):]] = props(m)["AuthorizationType"]
		}
	}
	if want := map[string]any{"POST /callbacks": "NONE", "POST /iam": "AWS_IAM"}; !maps.Equal(auth, want) {
		t.Errorf("callback methods and their authorization: %v, want %v", auth, want)
	}
	for id, path := range pathOf {
		if strings.HasSuffix(path, "/iam") && !strings.Contains(path, pathIDOf(pathOf, "/callbacks")) {
			t.Errorf("resource %s (%s) is not under /callbacks", id, path)
		}
	}

	// The policy: invoke POST /callbacks/iam on this API's stage, alone.
	var policy map[string]any
	for id, r := range of("AWS::IAM::ManagedPolicy") {
		if strings.HasPrefix(id, "CallbackPolicy") {
			policy = props(r)
		}
	}
	if policy == nil {
		t.Fatal("no CallbackPolicy")
	}
	if name, _ := policy["ManagedPolicyName"].(string); name != "orderly-"+p.Stage+"-callback" {
		t.Errorf("policy name %q, want orderly-%s-callback", name, p.Stage)
	}
	statements, _ := policy["PolicyDocument"].(map[string]any)["Statement"].([]any)
	if len(statements) != 1 {
		t.Fatalf("callback policy statements: %v, want one", statements)
	}
	st := statements[0].(map[string]any)
	resource, _ := json.Marshal(st["Resource"])
	if st["Action"] != "execute-api:Invoke" || st["Effect"] != "Allow" ||
		!strings.HasSuffix(string(resource), `"/POST/callbacks/iam"]]}`) || !strings.Contains(string(resource), `{"Ref":"Api`) ||
		strings.Contains(string(resource), "*") {
		t.Errorf("callback policy statement %v %s, want execute-api:Invoke on this API's POST /callbacks/iam alone", st["Action"], resource)
	}
	if outs := *tpl.FindOutputs(jsii.String("CallbackPolicyArn"), nil); len(outs) != 1 {
		t.Errorf("outputs CallbackPolicyArn: %v, want one", outs)
	}
}

// pathIDOf is the logical id of the resource whose path ends in suffix.
func pathIDOf(pathOf map[string]string, suffix string) string {
	for id, p := range pathOf {
		if strings.HasSuffix(p, suffix) {
			return id
		}
	}
	return "(none)"
}

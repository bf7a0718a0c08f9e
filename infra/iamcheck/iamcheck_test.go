package iamcheck

import (
	"slices"
	"strings"
	"testing"

	"orderly/internal/measure/callrecord"
)

// A template in the shape the CDK synthesizes: one function, its role's
// default policy, its table with an index and a stream, a queue it is fed
// by, a log group and an encrypted topic.
const testTemplate = `{"Resources": {
  "FnABCDEF12": {"Type": "AWS::Lambda::Function", "Properties": {
    "FunctionName": "orderly-dev-recorder", "Role": {"Fn::GetAtt": ["FnRole12345678", "Arn"]},
    "LoggingConfig": {"LogGroup": {"Ref": "FnLogs0A0B0C0D"}}, "TracingConfig": {"Mode": "Active"}}},
  "FnRole12345678": {"Type": "AWS::IAM::Role", "Properties": {}},
  "FnLogs0A0B0C0D": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
  "TableAAAABBBB": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "orderly-dev-history"}},
  "QueueCCCCDDDD": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "orderly-dev-in"}},
  "KeyEEEEFFFF": {"Type": "AWS::KMS::Key", "Properties": {}},
  "Topic11112222": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "orderly-dev-alerts",
    "KmsMasterKeyId": {"Fn::GetAtt": ["KeyEEEEFFFF", "Arn"]}}},
  "Mapping": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
    "FunctionName": {"Ref": "FnABCDEF12"}, "EventSourceArn": {"Fn::GetAtt": ["QueueCCCCDDDD", "Arn"]}}},
  "Policy": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "FnRole12345678"}], "PolicyDocument": {"Statement": [
    {"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": {"Fn::GetAtt": ["FnLogs0A0B0C0D", "Arn"]}},
    {"Effect": "Allow", "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords"], "Resource": "*"},
    {"Effect": "Allow", "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl"],
     "Resource": {"Fn::GetAtt": ["QueueCCCCDDDD", "Arn"]}},
    {"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": {"Fn::GetAtt": ["TableAAAABBBB", "Arn"]}},
    {"Effect": "Allow", "Action": "dynamodb:Query", "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": ["TableAAAABBBB", "Arn"]}, "/index/*"]]}},
    {"Effect": "Allow", "Action": "sns:Publish", "Resource": {"Ref": "Topic11112222"}},
    {"Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": {"Fn::GetAtt": ["KeyEEEEFFFF", "Arn"]}},
    {"Effect": "Allow", "Action": "dynamodb:DeleteItem", "Resource": {"Fn::GetAtt": ["TableAAAABBBB", "Arn"]}}
  ]}}}
}}`

func TestCheck(t *testing.T) {
	tpl, err := Parse([]byte(testTemplate))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tpl, "dev")
	if err != nil {
		t.Fatal(err)
	}
	table := callrecord.Resource{Kind: callrecord.Table, Name: "orderly-dev-history"}
	index := callrecord.Resource{Kind: callrecord.Index, Name: "orderly-dev-history", Index: "alerts"}
	topic := callrecord.Resource{Kind: callrecord.Topic, Name: "orderly-dev-alerts"}
	used := []callrecord.Call{
		{Function: "recorder", Action: "dynamodb:PutItem", Resource: table},
		{Function: "recorder", Action: "dynamodb:Query", Resource: index},
		{Function: "recorder", Action: "sns:Publish", Resource: topic},
	}
	for _, tt := range []struct {
		name        string
		calls       []callrecord.Call
		rare        []string
		wantMissing []string
		wantUnused  []string
	}{
		{name: "every call allowed; a grant no call uses",
			calls: used, wantUnused: []string{"FnRole: dynamodb:DeleteItem on ${TableAAAABBBB.Arn}"}},
		{name: "a rare path's grant is not reported",
			calls: used, rare: []string{"FnRole: dynamodb:DeleteItem on ${Table.Arn}"}},
		{name: "a call on the table where only its indexes are granted",
			calls:       append(slices.Clone(used), callrecord.Call{Function: "recorder", Action: "dynamodb:Query", Resource: table}),
			rare:        []string{"FnRole: dynamodb:DeleteItem on ${Table.Arn}"},
			wantMissing: []string{"recorder: dynamodb:Query on table orderly-dev-history is not allowed: grant FnRole: dynamodb:Query on ${Table.Arn}"}},
		{name: "an action not granted; the key is used only through the topic",
			calls:       []callrecord.Call{{Function: "recorder", Action: "dynamodb:UpdateItem", Resource: table}},
			wantMissing: []string{"recorder: dynamodb:UpdateItem on table orderly-dev-history is not allowed: grant FnRole: dynamodb:UpdateItem on ${Table.Arn}"},
			wantUnused: []string{
				"FnRole: dynamodb:DeleteItem on ${TableAAAABBBB.Arn}", "FnRole: dynamodb:PutItem on ${TableAAAABBBB.Arn}",
				"FnRole: dynamodb:Query on ${TableAAAABBBB.Arn}/index/*",
				"FnRole: kms:Decrypt on ${KeyEEEEFFFF.Arn}", "FnRole: kms:GenerateDataKey on ${KeyEEEEFFFF.Arn}",
				"FnRole: sns:Publish on ${Topic11112222}"}},
		{name: "a function or resource the template lacks",
			calls: []callrecord.Call{{Function: "ghost", Action: "dynamodb:PutItem", Resource: table},
				{Function: "recorder", Action: "sqs:SendMessage", Resource: callrecord.Resource{Kind: callrecord.Queue, Name: "orderly-dev-out"}}},
			rare: []string{"FnRole: dynamodb:DeleteItem on ${Table.Arn}", "FnRole: dynamodb:PutItem on ${Table.Arn}",
				"FnRole: dynamodb:Query on ${Table.Arn}/index/*", "FnRole: sns:Publish on ${Topic}",
				"FnRole: kms:Decrypt on ${Key.Arn}", "FnRole: kms:GenerateDataKey on ${Key.Arn}"},
			wantMissing: []string{"ghost: dynamodb:PutItem on table orderly-dev-history: the template has no function orderly-dev-ghost",
				"recorder: sqs:SendMessage on queue orderly-dev-out: the template has no queue named orderly-dev-out"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := c.Check(tt.calls, tt.rare)
			var missing, unused []string
			for _, m := range rep.Missing {
				missing = append(missing, m.String())
			}
			for _, g := range rep.Unused {
				unused = append(unused, g.String())
			}
			// Unused grants print readably: compare without the hashes.
			for i := range tt.wantUnused {
				tt.wantUnused[i] = readable(tt.wantUnused[i])
			}
			if !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("missing:\n%s\nwant:\n%s", strings.Join(missing, "\n"), strings.Join(tt.wantMissing, "\n"))
			}
			if !slices.Equal(unused, tt.wantUnused) {
				t.Errorf("unused:\n%s\nwant:\n%s", strings.Join(unused, "\n"), strings.Join(tt.wantUnused, "\n"))
			}
		})
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		fold, want bool
	}{
		{"*", "${T.Arn}", false, true},
		{"${T.Arn}/index/*", "${T.Arn}/index/due", false, true},
		{"${T.Arn}/index/*", "${T.Arn}", false, false},
		{"${T.Arn}", "${T.Arn}/index/due", false, false},
		{"dynamodb:Get*", "dynamodb:GetItem", true, true},
		{"DynamoDB:getitem", "dynamodb:GetItem", true, true},
		{"dynamodb:?etItem", "dynamodb:GetItem", true, true},
		{"dynamodb:GetItem", "dynamodb:GetItems", true, false},
	} {
		if got := glob(tt.pattern, tt.s, tt.fold); got != tt.want {
			t.Errorf("glob(%q, %q) = %t, want %t", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// A statement the check cannot evaluate is refused, not guessed at.
func TestRefusesConditionsAndDenies(t *testing.T) {
	for _, st := range []string{
		`{"Effect": "Deny", "Action": "sqs:*", "Resource": "*"}`,
		`{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*", "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": "3600"}}}`,
		`{"Effect": "Allow", "NotAction": "sqs:SendMessage", "Resource": "*"}`,
		`{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*", "Condition": {"StringEquals": {"kms:ViaService": "a", "aws:SourceVpc": "b"}}}`,
		`{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*", "Condition": {"StringEquals": {"kms:ViaService": "a"}, "StringLike": {"aws:SourceVpc": "b"}}}`,
	} {
		tpl, err := Parse([]byte(`{"Resources": {"P": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "R"}], "PolicyDocument": {"Statement": [` + st + `]}}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(tpl, "dev"); err == nil {
			t.Errorf("New accepted the statement %s", st)
		}
	}
}

// A managed policy is checked as the principal its calls name, and only
// the roles of the principals that made calls are reported unused.
func TestManagedPolicyPrincipal(t *testing.T) {
	raw := strings.Replace(testTemplate, `"Policy": {`, `"ToolsPolicyAAAA1111": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {"Statement": [
    {"Effect": "Allow", "Action": ["dynamodb:Query", "dynamodb:GetItem"], "Resource": {"Fn::GetAtt": ["TableAAAABBBB", "Arn"]}}]}}},
  "Policy": {`, 1)
	tpl, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tpl, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Principal("tools", "NoSuchPolicy"); err == nil {
		t.Error("Principal accepted a policy the template lacks")
	}
	if err := c.Principal("tools", "ToolsPolicy"); err != nil {
		t.Fatal(err)
	}
	table := callrecord.Resource{Kind: callrecord.Table, Name: "orderly-dev-history"}
	rep := c.Check([]callrecord.Call{
		{Function: "tools", Action: "dynamodb:Query", Resource: table},
		{Function: "tools", Action: "dynamodb:PutItem", Resource: table},
	}, nil)
	var missing, unused []string
	for _, m := range rep.Missing {
		missing = append(missing, m.String())
	}
	for _, g := range rep.Unused {
		unused = append(unused, g.String())
	}
	if want := []string{"tools: dynamodb:PutItem on table orderly-dev-history is not allowed: grant ToolsPolicy: dynamodb:PutItem on ${Table.Arn}"}; !slices.Equal(missing, want) {
		t.Errorf("missing %q, want %q", missing, want)
	}
	if want := []string{"ToolsPolicy: dynamodb:GetItem on ${Table.Arn}"}; !slices.Equal(unused, want) {
		t.Errorf("unused %q, want %q (the function's role made no call here)", unused, want)
	}
}

// An agent's template: its service's secret (by name, with a customer
// managed key) and a function URL it invokes, granted with conditions.
const agentTemplate = `{"Resources": {
  "AgentABCDEF12": {"Type": "AWS::Lambda::Function", "Properties": {
    "FunctionName": "orderly-dev-payment-agent", "Role": {"Fn::GetAtt": ["AgentRole12345678", "Arn"]},
    "Environment": {"Variables": {"ORDERLY_SERVICE_URL": "https://pay.example.com",
      "ORDERLY_SERVICE_AUTH": "{\"type\":\"header\",\"header\":\"X-Api-Key\",\"secret\":\"orderly-dev-pay\",\"kmsKey\":\"arn:aws:kms:us-east-1:111122223333:key/k1\"}"}}}},
  "AgentRole12345678": {"Type": "AWS::IAM::Role", "Properties": {}},
  "Policy": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "AgentRole12345678"}], "PolicyDocument": {"Statement": [
    {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
      ":secretsmanager:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}, ":secret:orderly-dev-pay-??????"]]}},
    {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "arn:aws:kms:us-east-1:111122223333:key/k1",
     "Condition": {"StringEquals": {"kms:ViaService": {"Fn::Join": ["", ["secretsmanager.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}}}},
    {"Effect": "Allow", "Action": "lambda:InvokeFunctionUrl", "Resource": "arn:aws:lambda:us-east-1:111122223333:function:pay",
     "Condition": {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}}}
  ]}}}
}}`

func TestCheckServiceGrants(t *testing.T) {
	tpl, err := Parse([]byte(agentTemplate))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tpl, "dev")
	if err != nil {
		t.Fatal(err)
	}
	secret := callrecord.Call{Function: "payment-agent", Action: "secretsmanager:GetSecretValue", Resource: callrecord.Resource{Kind: callrecord.Secret, Name: "orderly-dev-pay"}}
	fn := callrecord.Resource{Kind: callrecord.ARN, Name: "arn:aws:lambda:us-east-1:111122223333:function:pay"}
	invoke := callrecord.Call{Function: "payment-agent", Action: "lambda:InvokeFunctionUrl", Resource: fn,
		Condition: callrecord.Condition{Key: "lambda:FunctionUrlAuthType", Value: "AWS_IAM"}}
	for _, tt := range []struct {
		name                    string
		calls                   []callrecord.Call
		wantMissing, wantUnused []string
	}{
		{name: "the secret (and, through Secrets Manager, its key) and the function URL",
			calls: []callrecord.Call{secret, invoke}},
		{name: "another secret; no secret read leaves the key unused",
			calls: []callrecord.Call{{Function: "payment-agent", Action: "secretsmanager:GetSecretValue", Resource: callrecord.Resource{Kind: callrecord.Secret, Name: "orderly-dev-other"}}, invoke},
			wantMissing: []string{"payment-agent: secretsmanager:GetSecretValue on secret orderly-dev-other is not allowed: " +
				"grant AgentRole: secretsmanager:GetSecretValue on arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:orderly-dev-other-Ab12Cd"},
			wantUnused: []string{"AgentRole: kms:Decrypt on arn:aws:kms:us-east-1:111122223333:key/k1 if kms:ViaService=secretsmanager.${AWS::Region}.amazonaws.com",
				"AgentRole: secretsmanager:GetSecretValue on arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:orderly-dev-pay-??????"}},
		{name: "a function URL call outside the grant's condition",
			calls: []callrecord.Call{secret, {Function: "payment-agent", Action: "lambda:InvokeFunctionUrl", Resource: fn,
				Condition: callrecord.Condition{Key: "lambda:FunctionUrlAuthType", Value: "NONE"}}},
			wantMissing: []string{"payment-agent: lambda:InvokeFunctionUrl on arn arn:aws:lambda:us-east-1:111122223333:function:pay with lambda:FunctionUrlAuthType=NONE is not allowed: " +
				"grant AgentRole: lambda:InvokeFunctionUrl on arn:aws:lambda:us-east-1:111122223333:function:pay if lambda:FunctionUrlAuthType=NONE"},
			wantUnused: []string{"AgentRole: lambda:InvokeFunctionUrl on arn:aws:lambda:us-east-1:111122223333:function:pay if lambda:FunctionUrlAuthType=AWS_IAM"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := c.Check(tt.calls, nil)
			var missing, unused []string
			for _, m := range rep.Missing {
				missing = append(missing, m.String())
			}
			for _, g := range rep.Unused {
				unused = append(unused, g.String())
			}
			if !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("missing:\n%s\nwant:\n%s", strings.Join(missing, "\n"), strings.Join(tt.wantMissing, "\n"))
			}
			if !slices.Equal(unused, tt.wantUnused) {
				t.Errorf("unused:\n%s\nwant:\n%s", strings.Join(unused, "\n"), strings.Join(tt.wantUnused, "\n"))
			}
		})
	}
}

package stack_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"orderly/infra/stack"
	"orderly/internal/actor/api/openapi"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/services"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the synthesized stack")

// synthesized is built once: synthesis starts a jsii runtime and takes
// seconds, and every test reads the same template.
var (
	synthesized *stack.Stack
	template    assertions.Template
	resourcesOf map[string]map[string]any // logical id -> resource
	// synthesizedStage is the stage the template was synthesized for.
	synthesizedStage string
	// synthesisContext is the app context the template was synthesized
	// with (cdk.json's, with the test's assets, workflows and services),
	// for tests that synthesize a variant of the stack.
	synthesisContext map[string]any
)

func TestMain(m *testing.M) {
	flag.Parse()
	if _, err := os.Stat(filepath.Join("..", "..", "bin", "submit", "bootstrap")); err != nil {
		fmt.Fprintln(os.Stderr, "infra tests need the function binaries: run `make build` first")
		os.Exit(1)
	}
	// The context (and so the feature flags) of cdk.json, so the tests see
	// the template `cdk synth` makes.
	var cdkJSON struct{ Context map[string]any }
	raw, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err == nil {
		err = json.Unmarshal(raw, &cdkJSON)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "read infra/cdk.json:", err)
		os.Exit(1)
	}
	cdkJSON.Context[stack.CtxAssetsDir] = filepath.Join("..", "..", "bin")
	cdkJSON.Context[stack.CtxPricesFile] = filepath.Join("..", "..", "cost", "prices.json")
	cdkJSON.Context[stack.CtxWorkflowsDir] = filepath.Join("..", "..", "workflows")
	// One service of each authentication, so the role check proves the
	// grants of each (as -c services='...' would give them).
	stage, _ := cdkJSON.Context[stack.CtxStage].(string)
	raw, _ = json.Marshal(roleCheckServices(stage, ""))
	cdkJSON.Context[stack.CtxServices] = string(raw)
	synthesisContext = cdkJSON.Context
	app := awscdk.NewApp(&awscdk.AppProps{Context: &cdkJSON.Context})
	props, err := stack.FromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	synthesizedStage = props.Stage
	synthesized, err = stack.New(app, "Orderly-test", props)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stack.Check(app)
	template = assertions.Template_FromStack(synthesized.Stack, nil)
	raw, _ = json.Marshal(template.ToJSON())
	var doc struct{ Resources map[string]map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	resourcesOf = doc.Resources
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range resourcesOf {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

func TestResourceCounts(t *testing.T) {
	want := map[string]int{
		"AWS::Lambda::Function":           7,  // submit, scheduler, supervisor, recorder, three agents
		"AWS::Lambda::EventSourceMapping": 6,  // stream + replies to the scheduler, the stream to the recorder, one queue per agent
		"AWS::IAM::Role":                  8,  // one per function, plus API Gateway's logging role
		"AWS::Logs::LogGroup":             8,  // one per function, plus API access logs
		"AWS::DynamoDB::Table":            2,  // orders, history
		"AWS::SQS::Queue":                 10, // 4 queues, their 4 DLQs, stream and schedule failures
		"AWS::SQS::QueuePolicy":           10, // TLS-only, one per queue
		"AWS::SNS::Topic":                 1,
		"AWS::KMS::Key":                   1,
		"AWS::Events::EventBus":           1,
		"AWS::ApiGateway::RestApi":        1,
		// POST and GET /orders, GET /orders/{id}, its history, cancel,
		// redrive and events, GET /ops/orders, GET /ops/orders/{id}, its
		// history and events, POST /workflows/{workflow}/orders and POST
		// /workflows/order/orders
		"AWS::ApiGateway::Method":           13,
		"AWS::SecretsManager::Secret":       2, // the page token key, the callback key
		"AWS::IAM::ManagedPolicy":           3, // the client and operator policies, and the operators' tools
		"AWS::ApiGateway::RequestValidator": 1,
		"AWS::ApiGateway::Model":            2, // POST /orders's, and the order workflow's
		"AWS::ApiGateway::GatewayResponse":  1,
		"AWS::Events::Rule":                 1,
		// 6 DLQs + 4 queue ages + 7 functions × (errors, throttles) +
		// orders in Error + a pause overrun + 3 agents' open circuit
		// breakers + 3 agents × 7 configuration fault statuses
		"AWS::CloudWatch::Alarm": 6 + 4 + 14 + 1 + 1 + 3 + 3*len(remote.ConfigurationStatuses),
	}
	for typ, n := range want {
		template.ResourceCountIs(jsii.String(typ), jsii.Number(n))
	}
	t.Logf("%d resources in all", len(resourcesOf))

	// docs/deploy.md says how many resources a deploy makes: the
	// template's, and the CDKMetadata resource `cdk synth` adds (the
	// assertions' template leaves it out). The test's services are as
	// many as cdk.json's, each with the same resources.
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	said := regexp.MustCompile(`(?m)^(\d+) resources with`).FindSubmatch(page)
	if said == nil {
		t.Fatal("docs/deploy.md does not say how many resources a deploy makes (a line starting \"N resources with\")")
	}
	if got := fmt.Sprint(len(resourcesOf) + 1); string(said[1]) != got {
		t.Errorf("docs/deploy.md says %s resources, a synthesis makes %s", said[1], got)
	}
}

// logicalName strips CDK's 8-character hash from a logical id.
var hashSuffix = regexp.MustCompile(`[0-9A-F]{8}$`)

func logicalName(id string) string { return hashSuffix.ReplaceAllString(id, "") }

// describe renders an IAM resource reference readably: the logical name
// of what it points at, "*" for everything.
func describe(v any) string {
	switch r := v.(type) {
	case string:
		return r
	case map[string]any:
		if ga, ok := r["Fn::GetAtt"].([]any); ok {
			name := logicalName(ga[0].(string))
			if ga[1] == "Arn" {
				return name
			}
			return name + "." + ga[1].(string)
		}
		if ref, ok := r["Ref"].(string); ok {
			return logicalName(ref)
		}
		if join, ok := r["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range join[1].([]any) {
				parts = append(parts, describe(p))
			}
			return strings.Join(parts, join[0].(string))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// grants returns, per role, every "action on resource" its policies allow.
func grants(t *testing.T) map[string][]string {
	t.Helper()
	return grantsOf(t, ofType("AWS::IAM::Policy"))
}

// grantsOf is, per role, every "action on resource[ if condition]" the
// policies allow, sorted.
func grantsOf(t *testing.T, policies map[string]map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range policies {
		pp := props(p)
		for _, role := range list(pp["Roles"]) {
			name := describe(role)
			for _, st := range list(pp["PolicyDocument"].(map[string]any)["Statement"]) {
				s := st.(map[string]any)
				if s["Effect"] != "Allow" {
					t.Errorf("role %s has a %v statement; the stack only allows", name, s["Effect"])
				}
				cond := conditionOf(s["Condition"])
				for _, a := range list(s["Action"]) {
					for _, r := range list(s["Resource"]) {
						out[name] = append(out[name], fmt.Sprintf("%s on %s%s", a, describe(r), cond))
					}
				}
			}
		}
	}
	for _, g := range out {
		sort.Strings(g)
	}
	return out
}

// conditionOf renders a statement's condition as " if OP KEY=VALUE", one
// test after another in a stable order; "" for none.
func conditionOf(c any) string {
	ops, _ := c.(map[string]any)
	var tests []string
	for op, keys := range ops {
		m, _ := keys.(map[string]any)
		for key, v := range m {
			tests = append(tests, fmt.Sprintf(" if %s %s=%s", op, key, describe(v)))
		}
	}
	sort.Strings(tests)
	return strings.Join(tests, "")
}

func golden(t *testing.T, name string, got any) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (run go test ./infra/stack -update to create it): %v", path, err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs from the synthesized stack; review the change, then run go test ./infra/stack -update\n got: %s", path, data)
	}
}

func TestIAMMatchesAllowList(t *testing.T) {
	golden(t, "iam-allowlist.json", grants(t))
}

func TestIAMIsLeastPrivilege(t *testing.T) {
	forbidden := regexp.MustCompile(`^(dynamodb:(Scan|DeleteItem|BatchWriteItem|\*)|[a-z0-9]+:\*|\*) `)
	for role, gs := range grants(t) {
		for _, g := range gs {
			if forbidden.MatchString(g) {
				t.Errorf("role %s may %s", role, g)
			}
			// Wildcard resources only where the action has no resource-level
			// permissions (the nag suppressions give the reasons).
			if strings.HasSuffix(g, " on *") && !strings.HasPrefix(g, "xray:") && g != "dynamodb:ListStreams on *" {
				t.Errorf("role %s has a wildcard resource: %s", role, g)
			}
			// An agent's one write is its heartbeat; it reads only its
			// own service's pause.
			agent := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(role, "Agent"), "Role"))
			ownPause := "dynamodb:GetItem on OrdersTable if ForAllValues:StringEquals dynamodb:LeadingKeys=" + order.PauseKey(order.PauseService, agent)
			if strings.HasPrefix(role, "Agent") && strings.HasPrefix(g, "dynamodb:") && g != "dynamodb:UpdateItem on OrdersTable" && g != ownPause {
				t.Errorf("agent role %s may touch DynamoDB beyond its heartbeat: %s", role, g)
			}
		}
	}
	for id, r := range ofType("AWS::IAM::Role") {
		if mp := props(r)["ManagedPolicyArns"]; mp != nil && !strings.HasPrefix(id, "ApiCloudWatchRole") {
			t.Errorf("role %s has managed policies %v; function roles must not", id, mp)
		}
	}
}

func TestQueuesHaveRedriveAndTLSOnly(t *testing.T) {
	queues := ofType("AWS::SQS::Queue")
	secured := map[string]bool{}
	for _, p := range ofType("AWS::SQS::QueuePolicy") {
		pp := props(p)
		for _, st := range list(pp["PolicyDocument"].(map[string]any)["Statement"]) {
			s := st.(map[string]any)
			cond, _ := json.Marshal(s["Condition"])
			if s["Effect"] == "Deny" && strings.Contains(string(cond), `"aws:SecureTransport":"false"`) {
				for _, q := range list(pp["Queues"]) {
					secured[describe(q)] = true
				}
			}
		}
	}
	for id, q := range queues {
		name := logicalName(id)
		if !secured[name] {
			t.Errorf("queue %s has no TLS-only policy", name)
		}
		if props(q)["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %s is not encrypted", name)
		}
		redrive, hasRedrive := props(q)["RedrivePolicy"].(map[string]any)
		isDLQ := strings.HasSuffix(name, "DLQ") || strings.HasSuffix(name, "Failures")
		switch {
		case isDLQ && hasRedrive:
			t.Errorf("dead-letter queue %s has a redrive policy", name)
		case !isDLQ && !hasRedrive:
			t.Errorf("queue %s has no redrive policy", name)
		case !isDLQ && redrive["maxReceiveCount"] != float64(resources.MaxReceiveCount):
			t.Errorf("queue %s redrives after %v receives, want %d", name, redrive["maxReceiveCount"], resources.MaxReceiveCount)
		}
	}
}

func TestVisibilityTimeoutCoversConsumer(t *testing.T) {
	functions := ofType("AWS::Lambda::Function")
	queues := ofType("AWS::SQS::Queue")
	mappings := 0
	for _, m := range ofType("AWS::Lambda::EventSourceMapping") {
		mp := props(m)
		src := describe(mp["EventSourceArn"])
		q, ok := queues[findID(queues, src)]
		if !ok {
			continue // the stream mapping
		}
		mappings++
		fn := functions[findID(functions, describe(mp["FunctionName"]))]
		timeout := props(fn)["Timeout"].(float64)
		visibility := props(q)["VisibilityTimeout"].(float64)
		if visibility < resources.VisibilityFactor*timeout {
			t.Errorf("queue %s: visibility %vs is under %d× its consumer's %vs timeout", src, visibility, resources.VisibilityFactor, timeout)
		}
		if fr, _ := json.Marshal(mp["FunctionResponseTypes"]); string(fr) != `["ReportBatchItemFailures"]` {
			t.Errorf("mapping of %s does not report batch item failures: %s", src, fr)
		}
		if mp["ScalingConfig"] == nil {
			t.Errorf("mapping of %s has no maximum concurrency", src)
		}
	}
	if mappings != 4 {
		t.Errorf("checked %d SQS mappings, want 4", mappings)
	}
}

func findID(rs map[string]map[string]any, name string) string {
	for id := range rs {
		if logicalName(id) == name {
			return id
		}
	}
	return ""
}

func TestStreamMappingIsFilteredAndHasAFailureDestination(t *testing.T) {
	template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"EventSourceArn":             map[string]any{"Fn::GetAtt": assertions.Match_ArrayWith(&[]any{"StreamArn"})},
		"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
		"BisectBatchOnFunctionError": true,
		"DestinationConfig":          map[string]any{"OnFailure": map[string]any{"Destination": assertions.Match_AnyValue()}},
		"ParallelizationFactor":      resources.StreamParallelization,
		// Only an order whose step waits for a claim invokes the Scheduler.
		"FilterCriteria": map[string]any{"Filters": []any{map[string]any{
			"Pattern": assertions.Match_SerializedJson(map[string]any{
				"eventName": []any{"INSERT", "MODIFY"},
				"dynamodb": map[string]any{"NewImage": map[string]any{
					resources.AttrUnclaimed: map[string]any{"S": []any{map[string]any{"exists": true}}},
				}},
			}),
		}}},
	})
}

func TestTablesAreRecoverableAndRetained(t *testing.T) {
	tables := ofType("AWS::DynamoDB::Table")
	for id, tbl := range tables {
		p := props(tbl)
		if tbl["DeletionPolicy"] != "Retain" || tbl["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("table %s is not retained", id)
		}
		// Ended orders and their history expire by TTL, never a Scan.
		if ttl, _ := p["TimeToLiveSpecification"].(map[string]any); ttl["AttributeName"] != resources.AttrExpiresAt || ttl["Enabled"] != true {
			t.Errorf("table %s: TTL %v, want %s enabled", id, ttl, resources.AttrExpiresAt)
		}
		pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any)
		if pitr["PointInTimeRecoveryEnabled"] != true || p["BillingMode"] != "PAY_PER_REQUEST" {
			t.Errorf("table %s: PITR %v, billing %v; want PITR on demand", id, pitr, p["BillingMode"])
		}
	}
	template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"TableName":           resources.New("dev", nil).Orders.Name,
		"StreamSpecification": map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"GlobalSecondaryIndexes": []any{map[string]any{
			"IndexName": resources.DueIndexName,
			"KeySchema": []any{
				map[string]any{"AttributeName": resources.AttrDueShard, "KeyType": "HASH"},
				map[string]any{"AttributeName": resources.AttrDueAt, "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
		}, map[string]any{
			"IndexName": resources.ErrorIndexName,
			"KeySchema": []any{
				map[string]any{"AttributeName": resources.AttrInError, "KeyType": "HASH"},
				map[string]any{"AttributeName": resources.AttrInErrorSince, "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
		}, map[string]any{
			"IndexName": resources.CreatedIndexName,
			"KeySchema": []any{
				map[string]any{"AttributeName": resources.AttrListed, "KeyType": "HASH"},
				map[string]any{"AttributeName": resources.AttrCreated, "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{resources.AttrCaller,
				resources.AttrCustomer, resources.AttrWorkflow, resources.AttrVersion, resources.AttrOutcome, resources.AttrEnded}},
		}, map[string]any{
			"IndexName": resources.EndedIndexName,
			"KeySchema": []any{
				map[string]any{"AttributeName": resources.AttrListed, "KeyType": "HASH"},
				map[string]any{"AttributeName": resources.AttrEnded, "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{resources.AttrCaller,
				resources.AttrCustomer, resources.AttrWorkflow, resources.AttrVersion, resources.AttrOutcome, resources.AttrCreated}},
		}},
	})
}

func TestFunctionsAreConfigured(t *testing.T) {
	for id, fn := range ofType("AWS::Lambda::Function") {
		p := props(fn)
		checks := []struct {
			what string
			got  any
			want any
		}{
			{"runtime", p["Runtime"], "provided.al2023"},
			{"architecture", p["Architectures"], []any{"arm64"}},
			{"handler", p["Handler"], "bootstrap"},
			{"tracing", p["TracingConfig"], map[string]any{"Mode": "Active"}},
			{"log format", p["LoggingConfig"].(map[string]any)["LogFormat"], "JSON"},
		}
		for _, c := range checks {
			if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
				t.Errorf("function %s: %s is %v, want %v", id, c.what, c.got, c.want)
			}
		}
		if p["Timeout"] == nil || p["MemorySize"] == nil {
			t.Errorf("function %s has no explicit timeout or memory", id)
		}
		// Only a LocalStack deployment names a caller for unidentified
		// requests; in AWS the IAM authorizer names every caller.
		if env, _ := p["Environment"].(map[string]any); env != nil {
			if vars, _ := env["Variables"].(map[string]any); vars[resources.EnvAnonymousCaller] != nil {
				t.Errorf("function %s names an anonymous caller without the %s context", id, stack.CtxAnonymousCaller)
			}
		}
	}
	for id, lg := range ofType("AWS::Logs::LogGroup") {
		if props(lg)["RetentionInDays"] == nil {
			t.Errorf("log group %s keeps logs forever", id)
		}
	}
}

// Every function gets each variable its main requires (a missing one is
// empty at run time, a failure only a deployed stack shows).
func TestFunctionsGetTheVariablesTheyRequire(t *testing.T) {
	required := map[string][]string{
		"submit":    {resources.EnvOrdersTable, resources.EnvHistoryTable, resources.EnvPageTokenSecret, resources.EnvRequestQueueURL(ordertest.AgentInventory)},
		"scheduler": {resources.EnvOrdersTable, resources.EnvAlertTopicARN, resources.EnvRequestQueueURL(ordertest.AgentInventory), resources.EnvRequestQueueURL(ordertest.AgentPayment), resources.EnvRequestQueueURL(ordertest.AgentShipping)},
		"supervisor": {resources.EnvOrdersTable, resources.EnvAlertTopicARN, resources.EnvResponseQueueURL,
			resources.EnvRequestQueueURL(ordertest.AgentInventory), resources.EnvRequestQueueURL(ordertest.AgentPayment), resources.EnvRequestQueueURL(ordertest.AgentShipping)},
		"recorder":        {resources.EnvHistoryTable, resources.EnvEventBus},
		"inventory-agent": {"AGENT_NAME", services.EnvURL, services.EnvAuth, resources.EnvResponseQueueURL, resources.EnvOrdersTable, resources.EnvRequestQueueURL(ordertest.AgentInventory)},
		"payment-agent":   {"AGENT_NAME", services.EnvURL, services.EnvAuth, resources.EnvResponseQueueURL, resources.EnvOrdersTable, resources.EnvRequestQueueURL(ordertest.AgentPayment)},
		"shipping-agent":  {"AGENT_NAME", services.EnvURL, services.EnvAuth, resources.EnvResponseQueueURL, resources.EnvOrdersTable, resources.EnvRequestQueueURL(ordertest.AgentShipping)},
	}
	seen := map[string]bool{}
	for id, fn := range ofType("AWS::Lambda::Function") {
		p := props(fn)
		name, _ := p["FunctionName"].(string)
		env, _ := p["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for suffix, want := range required {
			if !strings.HasSuffix(name, "-"+suffix) {
				continue
			}
			seen[suffix] = true
			for _, v := range want {
				if vars[v] == nil {
					t.Errorf("function %s (%s) lacks %s", name, id, v)
				}
			}
		}
	}
	for suffix := range required {
		if !seen[suffix] {
			t.Errorf("no function named …-%s", suffix)
		}
	}
}

func TestEveryAPIMethodIsAuthorizedAndValidated(t *testing.T) {
	methods := ofType("AWS::ApiGateway::Method")
	for id, m := range methods {
		p := props(m)
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("method %s: authorization %v, want AWS_IAM", id, p["AuthorizationType"])
		}
		if p["RequestValidatorId"] == nil {
			t.Errorf("method %s has no request validator", id)
		}
	}
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::Method"), map[string]any{
		"HttpMethod":    "POST",
		"RequestModels": map[string]any{"application/json": assertions.Match_AnyValue()},
	})
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::Method"), map[string]any{
		"HttpMethod":        "GET",
		"RequestParameters": map[string]any{"method.request.path.id": true},
	})
	// The searches declare their query parameters, all optional.
	template.ResourcePropertiesCountIs(jsii.String("AWS::ApiGateway::Method"), map[string]any{
		"HttpMethod":        "GET",
		"RequestParameters": map[string]any{"method.request.querystring.customer": false, "method.request.querystring.cursor": false},
	}, jsii.Number(2))
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
		"AccessLogSetting": map[string]any{"DestinationArn": assertions.Match_AnyValue()},
		"TracingEnabled":   true,
		"MethodSettings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100,
		})}),
	})
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::GatewayResponse"), map[string]any{
		"ResponseType":      "BAD_REQUEST_BODY",
		"ResponseTemplates": map[string]any{"application/json": assertions.Match_StringLikeRegexp(jsii.String("invalid_request"))},
	})
	template.HasResourceProperties(jsii.String("AWS::ApiGateway::Model"), map[string]any{
		"Schema": assertions.Match_ObjectLike(&map[string]any{
			"additionalProperties": false,
			"required":             []any{"customerId", "lines"},
		}),
	})
}

func TestAlarmsNotifyOperators(t *testing.T) {
	topic := findID(ofType("AWS::SNS::Topic"), "AlertTopic")
	alarms := ofType("AWS::CloudWatch::Alarm")
	var names []string
	for id, a := range alarms {
		p := props(a)
		actions, _ := json.Marshal(p["AlarmActions"])
		if !strings.Contains(string(actions), `"Ref":"`+topic+`"`) {
			t.Errorf("alarm %s does not notify the alert topic: %s", id, actions)
		}
		names = append(names, logicalName(id))
	}
	for _, want := range []string{"OrdersInError", "SchedulerErrors", "SupervisorThrottles", "AgentPaymentErrors",
		"StreamFailuresNotEmpty", "ScheduleFailuresNotEmpty", "ResponseQueueDLQNotEmpty", "RequestQueueShippingOldestMessage",
		"CircuitOpenInventory", "CircuitOpenPayment", "CircuitOpenShipping", "PauseOverrun"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no %s alarm among %v", want, names)
		}
	}
	template.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"KmsMasterKeyId": assertions.Match_AnyValue()})
	template.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"ScheduleExpression": "rate(1 minute)",
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"RetryPolicy":      map[string]any{"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 300},
			"DeadLetterConfig": map[string]any{"Arn": assertions.Match_AnyValue()},
		})},
	})
}

func TestNoUnsuppressedNagErrors(t *testing.T) {
	errs := assertions.Annotations_FromStack(synthesized.Stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("(AwsSolutions|Serverless)-.*")))
	for _, e := range *errs {
		//lint:ignore SA1019 the assertions package still returns this type; its replacement has no Go binding yet
		t.Errorf("cdk-nag: %s: %v", *e.Id, e.Entry.Data)
	}
	golden(t, "nag-suppressions.json", synthesized.Suppressions())
}

// Callers and operators are told apart by IAM: the client policy reaches
// the caller's own routes only (submit, read, cancel), the operator policy
// only the operator routes (read any order, redrive).
func TestClientAndOperatorPolicies(t *testing.T) {
	policies := ofType("AWS::IAM::ManagedPolicy")
	doc := func(name string) string {
		id := findID(policies, name)
		if id == "" {
			t.Fatalf("no %s among %v", name, keys(policies))
		}
		data, _ := json.Marshal(props(policies[id])["PolicyDocument"])
		return string(data)
	}
	client, operator := doc("ClientPolicy"), doc("OperatorPolicy")
	for _, c := range []struct {
		policy, doc, route string
		want               bool
	}{
		{"client", client, `/POST/orders"`, true},
		{"client", client, `/GET/orders"`, true},
		{"client", client, `/GET/orders/*"`, true},
		{"client", client, `/GET/ops/orders"`, false},
		{"client", client, `/GET/ops/orders/*"`, false},
		{"client", client, `/POST/orders/*/cancel"`, true},
		{"client", client, `/POST/orders/*/redrive"`, false},
		{"operator", operator, `/GET/ops/orders"`, true},
		{"operator", operator, `/GET/ops/orders/*"`, true},
		{"operator", operator, `/GET/orders"`, false},
		{"operator", operator, `/POST/orders/*/redrive"`, true},
		{"operator", operator, `/POST/orders"`, false},
		{"operator", operator, `/GET/orders/*"`, false},
		{"operator", operator, `/POST/orders/*/cancel"`, false},
	} {
		if got := strings.Contains(c.doc, c.route); got != c.want {
			t.Errorf("%s policy grants %s: %v, want %v (%s)", c.policy, c.route, got, c.want, c.doc)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The workflow's timing can be set per stage from context; the functions
// get it as their timing variables.
func TestTimingFromContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		want    order.Timing
		wantErr bool
	}{
		{"defaults", map[string]any{}, order.DefaultTiming, false},
		{"a short allowance keeps the ratio, heartbeats off", map[string]any{stack.CtxStepAllowance: "5s", stack.CtxMaxHeartbeats: "0"},
			func() order.Timing {
				d := order.DefaultTiming
				d.Allowance, d.MaxAllowance, d.MaxHeartbeats = 5*time.Second, 20*time.Second, 0
				return d
			}(), false},
		{"both allowances", map[string]any{stack.CtxStepAllowance: "10s", stack.CtxStepMaxAllowance: "15s"},
			func() order.Timing {
				d := order.DefaultTiming
				d.Allowance, d.MaxAllowance = 10*time.Second, 15*time.Second
				return d
			}(), false},
		{"not a duration", map[string]any{stack.CtxStepAllowance: "fast"}, order.Timing{}, true},
		{"negative heartbeats", map[string]any{stack.CtxMaxHeartbeats: "-1"}, order.Timing{}, true},
		// 4 × 40s: above what the agents' invocation leaves an attempt
		// (definition.CheckStage, which workflow validate applies too).
		{"a maximum the agents cannot run", map[string]any{stack.CtxStepAllowance: "40s"}, order.Timing{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ctx[stack.CtxPricesFile] = filepath.Join("..", "..", "cost", "prices.json")
			tt.ctx[stack.CtxWorkflowsDir] = filepath.Join("..", "..", "workflows")
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tt.ctx})
			p, err := stack.FromContext(app)
			if (err != nil) != tt.wantErr {
				t.Fatalf("FromContext: %v, want error %t", err, tt.wantErr)
			}
			if err == nil && p.Timing != tt.want {
				t.Errorf("timing %+v, want %+v", p.Timing, tt.want)
			}
		})
	}
}

// The API Gateway request model is the OpenAPI document's submission
// schema: one description of a valid order for the gateway, the Go code
// and clients.
func TestRequestModelIsTheOpenAPISchema(t *testing.T) {
	models := ofType("AWS::ApiGateway::Model")
	// POST /orders's, and one per workflow.
	if len(models) != 2 {
		t.Fatalf("%d request models, want 2", len(models))
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON(ordertest.Built(order.DefaultTiming)), &doc); err != nil {
		t.Fatal(err)
	}
	for id, m := range models {
		got, _ := props(m)["Schema"].(map[string]any)
		delete(got, "$schema") // the draft API Gateway is told; OpenAPI 3.1 states its own
		delete(got, "title")
		raw, _ := json.Marshal(doc.Components.Schemas["Input.order"])
		var want map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		delete(want, "examples") // an annotation, which draft 4 has not
		raw, _ = json.Marshal(want)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", " ")
			t.Errorf("model %s:\n%s\nwant the OpenAPI submission schema:\n%s", id, g, raw)
		}
	}
}

// The retention is stage context, passed to every function as RETENTION.
// Synth refuses an invalid workflow definition with the loader's own
// messages, every problem at once, and deploys the repository's files.
func TestWorkflowsFromContext(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "..", "workflows", "order", "v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "order"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(raw), `"path": "/payment/refunds"`, `"path": "payment/refunds"`, 1)
	bad = strings.Replace(bad, `"method": "POST"`, `"method": "FETCH"`, 1)
	if bad == string(raw) {
		t.Fatal("the shipped file changed: update this test's edits")
	}
	if err := os.WriteFile(filepath.Join(dir, "order", "v1.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"), stack.CtxWorkflowsDir: dir}
	_, err = stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	file := filepath.Join(dir, "order", "v1.json")
	for _, want := range []string{
		file + `: steps[0].call.method: "FETCH": unknown, want one of GET, POST, PUT, PATCH, DELETE`,
		file + `: steps[1].undo.path: "payment/refunds": must start with "/"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromContext with a bad definition: %v, want a line %s", err, want)
		}
	}

	ctx[stack.CtxWorkflowsDir] = filepath.Join("..", "..", "workflows")
	p, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	if err != nil {
		t.Fatalf("FromContext: %v", err)
	}
	if got, want := p.Workflows.Agents(), []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping}; !slices.Equal(got, want) {
		t.Errorf("Workflows.Agents() = %v, want %v", got, want)
	}
}

func TestRetentionFromContext(t *testing.T) {
	for id, fn := range ofType("AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[resources.EnvRetention] != resources.DefaultRetention.String() {
			t.Errorf("function %s: %s = %v, want the default %s", logicalName(id), resources.EnvRetention, vars[resources.EnvRetention], resources.DefaultRetention)
		}
	}
	for _, tt := range []struct {
		days    any
		want    time.Duration
		wantErr bool
	}{{"30", 30 * 24 * time.Hour, false}, {float64(365), 365 * 24 * time.Hour, false}, {"0", 0, true}, {"soon", 0, true}} {
		ctx := map[string]any{stack.CtxRetentionDays: tt.days, stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"),
			stack.CtxWorkflowsDir: filepath.Join("..", "..", "workflows")}
		p, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
		if (err != nil) != tt.wantErr || (err == nil && p.Retention != tt.want) {
			t.Errorf("retentionDays=%v: %s, %v; want %s (error %t)", tt.days, p.Retention, err, tt.want, tt.wantErr)
		}
	}
}

// EventBridge invokes the Supervisor asynchronously: its retries and its
// events' maximum age are set on purpose (AWS's serverless rules, ES1007),
// not left at Lambda's defaults (two retries over six hours).
func TestSupervisorAsyncInvocationIsConfigured(t *testing.T) {
	configs := ofType("AWS::Lambda::EventInvokeConfig")
	if len(configs) != 1 {
		t.Fatalf("%d EventInvokeConfigs, want the Supervisor's", len(configs))
	}
	for _, c := range configs {
		p := props(c)
		if fn, _ := p["FunctionName"].(map[string]any); fn == nil || !strings.HasPrefix(describe(fn), "Supervisor") {
			t.Errorf("EventInvokeConfig for %v, want the Supervisor", p["FunctionName"])
		}
		if p["MaximumRetryAttempts"] != float64(stack.SupervisorRetryAttempts) {
			t.Errorf("MaximumRetryAttempts %v, want %d", p["MaximumRetryAttempts"], stack.SupervisorRetryAttempts)
		}
		if want := stack.SupervisorMaxEventAge(time.Minute).Seconds(); p["MaximumEventAgeInSeconds"] != want {
			t.Errorf("MaximumEventAgeInSeconds %v, want %v", p["MaximumEventAgeInSeconds"], want)
		}
	}
}

// A step's own timing must fit the agent's invocation too: an attempt
// longer than it would be cut short every time.
func TestAStepsOwnTimingMustFitTheAgentsTimeout(t *testing.T) {
	ctx := map[string]any{stack.CtxPricesFile: filepath.Join("..", "..", "cost", "prices.json"), stack.CtxWorkflowsDir: filepath.Join("..", "..", "workflows")}
	p, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Workflows.Latest()
	w.Steps = slices.Clone(w.Steps)
	w.Steps[1].Allowance, w.Steps[1].MaxAllowance = 2*time.Minute, 5*time.Minute
	p.Workflows = order.MustVersions(w)
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "steps[1] (charge-payment): max allowance 5m0s") {
		t.Errorf("Validate() = %v, want the step's timing refused", err)
	}
}

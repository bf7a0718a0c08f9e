package stack

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	apiactor "orderly/internal/actor/api"
	"orderly/internal/order"
)

// newAPI builds the REST API: IAM (SigV4) authorization on every method,
// the order body validated against a JSON Schema built from the same
// limits the submission function enforces, stage throttling, access logs
// and X-Ray tracing.
func newAPI(s *Stack) awsapigateway.RestApi {
	accessLogs := awslogs.NewLogGroup(s.Stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     s.props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	api := awsapigateway.NewRestApi(s.Stack, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName:   jsii.String("orderly-" + s.props.Stage),
		Description:   jsii.String("orderly orders API"),
		EndpointTypes: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		// Execution logging needs the account's API Gateway logging role.
		CloudWatchRole:              jsii.Bool(true),
		CloudWatchRoleRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(s.props.Stage),
			ThrottlingRateLimit:  jsii.Number(s.props.APIRateLimit),
			ThrottlingBurstLimit: jsii.Number(s.props.APIBurstLimit),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(accessLogs),
			AccessLogFormat: awsapigateway.AccessLogFormat_JsonWithStandardFields(&awsapigateway.JsonWithStandardFieldProps{
				Caller: jsii.Bool(true), HttpMethod: jsii.Bool(true), Ip: jsii.Bool(true), Protocol: jsii.Bool(true),
				RequestTime: jsii.Bool(true), ResourcePath: jsii.Bool(true), ResponseLength: jsii.Bool(true),
				Status: jsii.Bool(true), User: jsii.Bool(true),
			}),
			LoggingLevel:   awsapigateway.MethodLoggingLevel_ERROR,
			MetricsEnabled: jsii.Bool(true),
			TracingEnabled: jsii.Bool(true),
		},
		DefaultMethodOptions: &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_IAM},
	})

	// One validator checks whatever a method declares: the body model of
	// POST, the path parameter of GET.
	validator := api.AddRequestValidator(jsii.String("Validator"), &awsapigateway.RequestValidatorOptions{
		RequestValidatorName:      jsii.String("orderly-" + s.props.Stage),
		ValidateRequestBody:       jsii.Bool(true),
		ValidateRequestParameters: jsii.Bool(true),
	})
	// Each workflow's submissions are checked against its latest
	// version's input schema, read from its definition.
	modelOf := func(id, name string, w order.Workflow) awsapigateway.Model {
		schema, err := ModelOf(w)
		if err != nil {
			panic(err) // the definitions were checked when read
		}
		return api.AddModel(jsii.String(id), &awsapigateway.ModelOptions{
			ModelName: jsii.String(name), ContentType: jsii.String("application/json"), Schema: schema,
		})
	}
	model := modelOf("OrderModel", "Order", s.props.Workflows.Latest())

	// A body the model rejects gets the same error shape the function uses,
	// with API Gateway's account of what is wrong.
	api.AddGatewayResponse(jsii.String("BadRequestBody"), &awsapigateway.GatewayResponseOptions{
		Type: awsapigateway.ResponseType_BAD_REQUEST_BODY(),
		Templates: &map[string]*string{"application/json": jsii.String(
			`{"error":"invalid_request","message":"$util.escapeJavaScript($context.error.validationErrorString)"}`)},
	})

	integration := awsapigateway.NewLambdaIntegration(s.fns.submit, nil)
	orders := api.Root().AddResource(jsii.String("orders"), nil)
	orders.AddMethod(jsii.String("POST"), integration, &awsapigateway.MethodOptions{
		RequestValidator: validator,
		RequestModels:    &map[string]awsapigateway.IModel{"application/json": model},
	})
	// POST /workflows/NAME/orders submits an order of the named workflow,
	// with its own model; a name no workflow has reaches the function
	// through {workflow}, which answers 400 with the names there are.
	byWorkflow := api.Root().AddResource(jsii.String("workflows"), nil)
	byWorkflow.AddResource(jsii.String("{workflow}"), nil).AddResource(jsii.String("orders"), nil).
		AddMethod(jsii.String("POST"), integration, &awsapigateway.MethodOptions{
			RequestValidator:  validator,
			RequestParameters: &map[string]*bool{"method.request.path.workflow": jsii.Bool(true)},
		})
	for _, name := range s.props.Workflows.Names() {
		w, _ := s.props.Workflows.LatestOf(name)
		m := modelOf("WorkflowModel"+pascal(name), "Workflow"+pascal(name), w)
		byWorkflow.AddResource(jsii.String(name), nil).AddResource(jsii.String("orders"), nil).
			AddMethod(jsii.String("POST"), integration, &awsapigateway.MethodOptions{
				RequestValidator: validator,
				RequestModels:    &map[string]awsapigateway.IModel{"application/json": m},
			})
	}
	// GET /orders searches the caller's orders, GET /ops/orders anyone's
	// (operators): the function checks the parameters and the cursor.
	search := &awsapigateway.MethodOptions{RequestValidator: validator, RequestParameters: &map[string]*bool{}}
	for _, p := range apiactor.SearchParams {
		(*search.RequestParameters)["method.request.querystring."+p] = jsii.Bool(false)
	}
	orders.AddMethod(jsii.String("GET"), integration, search)
	getByID := &awsapigateway.MethodOptions{
		RequestValidator:  validator,
		RequestParameters: &map[string]*bool{"method.request.path.id": jsii.Bool(true)},
	}
	byID := orders.AddResource(jsii.String("{id}"), nil)
	byID.AddMethod(jsii.String("GET"), integration, getByID)
	// A client cancels its own order; an operator redrives any order in
	// Error. Separate methods, so IAM grants them separately. Their
	// optional bodies are checked by the function.
	byID.AddResource(jsii.String("cancel"), nil).AddMethod(jsii.String("POST"), integration, getByID)
	byID.AddResource(jsii.String("redrive"), nil).AddMethod(jsii.String("POST"), integration, getByID)
	// Operators read any caller's order here; a caller reads only its own
	// on /orders/{id}. IAM tells them apart: see the two policies below.
	byID.AddResource(jsii.String("history"), nil).AddMethod(jsii.String("GET"), integration, getByID)
	// A client sends an event to its own order, an operator to any: the
	// function checks the name and the data against the step's schema.
	event := &awsapigateway.MethodOptions{
		RequestValidator:  validator,
		RequestParameters: &map[string]*bool{"method.request.path.id": jsii.Bool(true), "method.request.path.name": jsii.Bool(true)},
	}
	byID.AddResource(jsii.String("events"), nil).AddResource(jsii.String("{name}"), nil).AddMethod(jsii.String("POST"), integration, event)
	opsOrders := api.Root().AddResource(jsii.String("ops"), nil).AddResource(jsii.String("orders"), nil)
	opsOrders.AddMethod(jsii.String("GET"), integration, search)
	opsByID := opsOrders.AddResource(jsii.String("{id}"), nil)
	opsByID.AddMethod(jsii.String("GET"), integration, getByID)
	opsByID.AddResource(jsii.String("history"), nil).AddMethod(jsii.String("GET"), integration, getByID)
	opsByID.AddResource(jsii.String("events"), nil).AddResource(jsii.String("{name}"), nil).AddMethod(jsii.String("POST"), integration, event)
	var callbacksIAM bool
	if s.props.Workflows.CallsBack() {
		// Services that call back report here. A callback carries no AWS
		// identity: the sealed token in its Authorization header allows
		// it, for one attempt of one step, and the function checks it.
		callbacks := api.Root().AddResource(jsii.String("callbacks"), nil)
		s.callbacks = callbacks.AddMethod(jsii.String("POST"), integration,
			&awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE})
		// Services inside AWS may call back signed with their role
		// instead (IAM, as every other method), the token in a header of
		// its own: the function still checks it, so a role that may call
		// back completes only the attempts whose calls it was sent.
		callbacks.AddResource(jsii.String("iam"), nil).AddMethod(jsii.String("POST"), integration, nil)
		callbacksIAM = true
	}

	invoke := func(paths ...string) awsiam.PolicyDocument {
		arns := make([]*string, len(paths))
		for i, p := range paths {
			arns[i] = api.ArnForExecuteApi(jsii.String(strings.Fields(p)[0]), jsii.String(strings.Fields(p)[1]), api.DeploymentStage().StageName())
		}
		return awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("execute-api:Invoke"), Resources: &arns}),
		}})
	}
	s.clientPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("ClientPolicy"), &awsiam.ManagedPolicyProps{
		ManagedPolicyName: jsii.String("orderly-" + s.props.Stage + "-client"),
		Description:       jsii.String("submit orders, find, read and cancel the caller's own orders, and send them events"),
		Document:          invoke("POST /orders", "POST /workflows/*/orders", "GET /orders", "GET /orders/*", "POST /orders/*/cancel", "POST /orders/*/events/*"),
	})
	s.operatorPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("OperatorPolicy"), &awsiam.ManagedPolicyProps{
		ManagedPolicyName: jsii.String("orderly-" + s.props.Stage + "-operator"),
		Description:       jsii.String("find and read any caller's orders, send them events, redrive an order in Error"),
		Document:          invoke("GET /ops/orders", "GET /ops/orders/*", "POST /orders/*/redrive", "POST /ops/orders/*/events/*"),
	})
	if callbacksIAM {
		s.callbackPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("CallbackPolicy"), &awsiam.ManagedPolicyProps{
			ManagedPolicyName: jsii.String("orderly-" + s.props.Stage + "-callback"),
			Description:       jsii.String("call back, signed, on POST /callbacks/iam: for the roles of services inside AWS whose steps call back"),
			Document:          invoke("POST " + apiactor.ResourceCallbacksIAM),
		})
	}
	return api
}

// OrderSchema is the default workflow's input schema as API Gateway's
// request model for POST /orders (draft 4, the version API Gateway
// supports): API Gateway rejects a bad body before it costs an
// invocation; the function checks again against the definition's own
// schema, and reports every problem at once.
func (s *Stack) OrderSchema() (*awsapigateway.JsonSchema, error) {
	return ModelOf(s.props.Workflows.Latest())
}

// ModelOf is w's input schema as an API Gateway model: the keywords of
// draft 4 that API Gateway validates with, read from the definition's
// schema, so that no second copy is kept by hand. A keyword the model
// cannot state is left to the function.
func ModelOf(w order.Workflow) (*awsapigateway.JsonSchema, error) {
	var doc map[string]any
	if err := json.Unmarshal(w.Input, &doc); err != nil {
		return nil, fmt.Errorf("workflow %s version %s: input schema: %w", w.Name, w.Version, err)
	}
	m := model(doc)
	m.Schema = awsapigateway.JsonSchemaVersion_DRAFT4
	m.Title = jsii.String(w.Name)
	return m, nil
}

var jsonTypes = map[string]awsapigateway.JsonSchemaType{
	"string": awsapigateway.JsonSchemaType_STRING, "integer": awsapigateway.JsonSchemaType_INTEGER,
	"number": awsapigateway.JsonSchemaType_NUMBER, "boolean": awsapigateway.JsonSchemaType_BOOLEAN,
	"object": awsapigateway.JsonSchemaType_OBJECT, "array": awsapigateway.JsonSchemaType_ARRAY,
	"null": awsapigateway.JsonSchemaType_NULL,
}

func model(doc map[string]any) *awsapigateway.JsonSchema {
	m := &awsapigateway.JsonSchema{}
	num := func(key string) *float64 {
		if v, ok := doc[key].(float64); ok {
			return jsii.Number(v)
		}
		return nil
	}
	if t, ok := jsonTypes[fmt.Sprint(doc["type"])]; ok {
		m.Type = t
	}
	if req, ok := doc["required"].([]any); ok {
		var names []string
		for _, r := range req {
			if n, ok := r.(string); ok {
				names = append(names, n)
			}
		}
		m.Required = jsii.Strings(names...)
	}
	if ap, ok := doc["additionalProperties"].(bool); ok {
		m.AdditionalProperties = jsii.Bool(ap)
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		out := map[string]*awsapigateway.JsonSchema{}
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				out[k] = model(sub)
			}
		}
		m.Properties = &out
	}
	if items, ok := doc["items"].(map[string]any); ok {
		m.Items = model(items)
	}
	if e, ok := doc["enum"].([]any); ok {
		m.Enum = &e
	}
	if p, ok := doc["pattern"].(string); ok {
		m.Pattern = jsii.String(p)
	}
	if d, ok := doc["description"].(string); ok {
		m.Description = jsii.String(d)
	}
	m.MinLength, m.MaxLength = num("minLength"), num("maxLength")
	m.Minimum, m.Maximum = num("minimum"), num("maximum")
	m.MinItems, m.MaxItems = num("minItems"), num("maxItems")
	return m
}

// pascal is a workflow name (a-z, 0-9, "-") as part of a logical id or a
// model name, which take letters and digits only: "fraud-check" is
// "FraudCheck".
func pascal(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

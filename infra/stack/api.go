package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

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
	model := api.AddModel(jsii.String("OrderModel"), &awsapigateway.ModelOptions{
		ModelName:   jsii.String("Order"),
		ContentType: jsii.String("application/json"),
		Schema:      OrderSchema(),
	})

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
	opsByID := api.Root().AddResource(jsii.String("ops"), nil).AddResource(jsii.String("orders"), nil).
		AddResource(jsii.String("{id}"), nil)
	opsByID.AddMethod(jsii.String("GET"), integration, getByID)
	opsByID.AddResource(jsii.String("history"), nil).AddMethod(jsii.String("GET"), integration, getByID)

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
		Description:       jsii.String("submit orders, read and cancel the caller's own orders"),
		Document:          invoke("POST /orders", "GET /orders/*", "POST /orders/*/cancel"),
	})
	s.operatorPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("OperatorPolicy"), &awsiam.ManagedPolicyProps{
		ManagedPolicyName: jsii.String("orderly-" + s.props.Stage + "-operator"),
		Description:       jsii.String("read any caller's order, redrive an order in Error"),
		Document:          invoke("GET /ops/orders/*", "POST /orders/*/redrive"),
	})
	return api
}

// OrderSchema is the POST /orders body as JSON Schema (draft 4, the
// version API Gateway supports). API Gateway rejects a bad body before it
// costs an invocation; the function checks again, and reports every
// problem at once.
func OrderSchema() *awsapigateway.JsonSchema {
	str := func(minLen, maxLen float64) *awsapigateway.JsonSchema {
		return &awsapigateway.JsonSchema{Type: awsapigateway.JsonSchemaType_STRING, MinLength: jsii.Number(minLen), MaxLength: jsii.Number(maxLen)}
	}
	sku := str(1, order.MaxSKULen)
	sku.Pattern = jsii.String(order.SKUPattern)
	// Text fields refuse the characters the function refuses: the same
	// rule, rendered as a pattern (order.TextPattern).
	text := func(minLen, maxLen float64) *awsapigateway.JsonSchema {
		s := str(minLen, maxLen)
		s.Pattern = jsii.String(order.TextPattern())
		return s
	}
	return &awsapigateway.JsonSchema{
		Schema:               awsapigateway.JsonSchemaVersion_DRAFT4,
		Title:                jsii.String("Order"),
		Type:                 awsapigateway.JsonSchemaType_OBJECT,
		Required:             jsii.Strings("customerId", "lines"),
		AdditionalProperties: jsii.Bool(false),
		Properties: &map[string]*awsapigateway.JsonSchema{
			"customerId":         text(1, order.MaxCustomerIDLen),
			"notificationTarget": text(0, order.MaxNotificationTarget),
			"lines": {
				Type:     awsapigateway.JsonSchemaType_ARRAY,
				MinItems: jsii.Number(1),
				MaxItems: jsii.Number(order.MaxLines),
				Items: &awsapigateway.JsonSchema{
					Type:                 awsapigateway.JsonSchemaType_OBJECT,
					Required:             jsii.Strings("sku", "quantity"),
					AdditionalProperties: jsii.Bool(false),
					Properties: &map[string]*awsapigateway.JsonSchema{
						"sku":      sku,
						"quantity": {Type: awsapigateway.JsonSchemaType_INTEGER, Minimum: jsii.Number(1), Maximum: jsii.Number(order.MaxQuantity)},
					},
				},
			},
		},
	}
}

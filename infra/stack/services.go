package stack

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/adapter/services"
)

// serviceEnv hands an agent its one service: base URL and authentication
// (package services). No agent learns another's.
func serviceEnv(svc services.Service) map[string]*string {
	return map[string]*string{
		services.EnvURL:  jsii.String(svc.URL),
		services.EnvAuth: jsii.String(svc.Auth.JSON()),
	}
}

// grantService lets an agent's role make exactly the calls its service's
// authentication makes: read its header's secret (and decrypt it through
// Secrets Manager when a customer managed key encrypts it), or invoke its
// function URL or its API's methods and paths the workflows' steps call
// (and GET anywhere on it for a step whose service is polled, whose status
// URLs the service names).
func (f *functions) grantService(s *Stack, fn awslambda.Function, agent string, svc services.Service) {
	a := svc.Auth
	switch a.Type {
	case services.AuthHeader:
		secret := a.Secret
		if !strings.HasPrefix(secret, "arn:") {
			// A secret's ARN ends in six random characters after its name.
			secret = *s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
				ResourceName: jsii.String(a.Secret + "-??????"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
		}
		allow(fn, jsii.String(secret), "secretsmanager:GetSecretValue")
		if a.KMSKey != "" {
			region := a.SecretRegion()
			if region == "" {
				region = *s.Stack.Region()
			}
			allowIf(fn, a.KMSKey, "StringEquals", "kms:ViaService", "secretsmanager."+region+".amazonaws.com", "kms:Decrypt")
		}
	case services.AuthSigV4:
		if a.Service == services.SigningLambda {
			allowIf(fn, a.Target, "StringEquals", services.ConditionFunctionURLAuthType, services.FunctionURLAuthIAM, services.ActionInvokeFunctionURL)
			allowIf(fn, a.Target, "Bool", services.ConditionInvokedViaFunctionURL, "true", services.ActionInvokeFunction)
			return
		}
		var granted []*string
		for _, wf := range s.props.Workflows.Workflows() {
			for _, step := range wf.Steps {
				if step.Agent != agent {
					continue
				}
				calls := []struct{ method, path string }{{step.Call.Method, step.Call.Path}, {step.UndoCall.Method, step.UndoCall.Path}}
				if step.Poll != nil {
					// Its status URLs are the service's to name, anywhere
					// under its base URL; the agent only reads them.
					calls = append(calls, struct{ method, path string }{"GET", "/*"})
				}
				for _, call := range calls {
					if call.path == "" {
						continue
					}
					arn := services.APIResource(a.Target, call.method, call.path)
					if !slices.ContainsFunc(granted, func(c *string) bool { return *c == arn }) {
						granted = append(granted, jsii.String(arn))
					}
				}
			}
		}
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(services.ActionInvokeAPI), Resources: &granted,
		}))
	}
}

// allowIf adds one statement: these actions on this resource, when the
// request's key equals value.
func allowIf(fn awslambda.Function, resource, operator, key, value string, actions ...string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings(actions...),
		Resources:  jsii.Strings(resource),
		Conditions: &map[string]any{operator: map[string]any{key: value}},
	}))
}

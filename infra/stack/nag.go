package stack

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Check applies cdk-nag's AWS Solutions and Serverless packs to scope.
func Check(scope constructs.Construct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	awscdk.Aspects_Of(scope).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// Why each suppressed rule does not fit this stack. Every suppression
// names its rule and one of these reasons; the list of suppressions is
// checked against testdata/nag-suppressions.golden so it cannot grow
// unnoticed.
const (
	whyXRay = "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; " +
		"CDK adds them for active tracing"
	whyXRayAndStreams = whyXRay + "; dynamodb:ListStreams, added for the stream event source, has none either"
	whySyncInvoked    = "invoked synchronously (API Gateway or an event source mapping), so a Lambda DLQ for asynchronous " +
		"invocations would never receive anything; failures stay in the source queue's DLQ or the stream-failures queue"
	whySQSMapping = "SQS event source mappings take no on-failure destination; the queue's redrive policy " +
		"moves a failing message to its dead-letter queue after 5 receives"
	whyAsyncDLQ = "a failed or expired Supervisor run goes to its dead-letter queue (schedule-failures), which alarms; " +
		"an on-failure destination to the same queue would only deliver each failure twice"
	whyDeadLetter = "a dead-letter queue is the end of the line: it needs no redrive policy of its own, " +
		"and an alarm fires as soon as it holds a message"
	whyStandaloneDLQ = "this queue is itself a dead-letter destination (stream event source on-failure / EventBridge target DLQ), " +
		"referenced outside any SQS redrive policy"
	whyIAMAuth      = "the API uses IAM (SigV4) authorization on every method: callers are AWS principals, not Cognito users"
	whyOrderIDs     = "order ids are made per request, so reading, cancelling, redriving orders or sending them events is granted on that method of every id under the route; an event's name is checked by the function against the order's workflow"
	whyPageTokenKey = "the page token key seals search cursors and guards no data at rest; a new key only makes open cursors fail with a 400, " +
		"and the submission function reads it once at start, so it is replaced by hand with a deployment, not by a rotation function"
	whyCallbackKey = "the callback key seals the tokens of calls waiting for their callback and guards no data at rest; a new key only makes " +
		"those tokens fail with a 401 (the steps time out and are called again with new ones), so it is replaced by hand with a deployment, not by a rotation function"
	whyCallbackToken = "services that call back have no AWS identity: the sealed token their call carried (AES-GCM, one attempt of one step, expiring with its wait) authorizes the callback, and the function refuses any other with 401"
	whyWorkflowNames = "a client may submit to any workflow the stage runs: the wildcard is the workflow's name, and a name no workflow has is answered 400 with the names there are"
	whyAPILogsRole   = "API Gateway's account-level logging role needs AmazonAPIGatewayPushToCloudWatchLogs, " +
		"the AWS-documented policy for execution logs"
)

// Suppression is one suppressed finding on one construct.
type Suppression struct {
	Rule string
	// AppliesTo narrows an IAM finding to these findings (e.g. Resource::*).
	AppliesTo []string
	Path      string
	Reason    string
}

func (s Suppression) String() string {
	applies := ""
	if len(s.AppliesTo) > 0 {
		applies = "[" + strings.Join(s.AppliesTo, ",") + "]"
	}
	return fmt.Sprintf("%s%s on %s: %s", s.Rule, applies, s.Path, s.Reason)
}

// Suppressions lists what suppress applied, sorted, for the golden test.
func (s *Stack) Suppressions() []string {
	out := make([]string, len(s.suppressions))
	for i, sup := range s.suppressions {
		out[i] = sup.String()
	}
	sort.Strings(out)
	return out
}

func suppress(s *Stack) {
	add := func(c constructs.IConstruct, children bool, rule, reason string, appliesTo ...string) {
		sup := cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
		if len(appliesTo) > 0 {
			sup.AppliesTo = &[]interface{}{}
			for _, a := range appliesTo {
				// "/…/" is a regex, for findings that name logical ids.
				if strings.HasPrefix(a, "/") && strings.HasSuffix(a, "/") {
					*sup.AppliesTo = append(*sup.AppliesTo, &cdknag.RegexAppliesTo{Regex: jsii.String(a)})
				} else {
					*sup.AppliesTo = append(*sup.AppliesTo, a)
				}
			}
		}
		cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{&sup}, jsii.Bool(children))
		path := strings.TrimPrefix(*c.Node().Path(), *s.Node().Path()+"/")
		s.suppressions = append(s.suppressions, Suppression{Rule: rule, AppliesTo: appliesTo, Path: path, Reason: reason})
	}

	for _, f := range s.fns.all {
		why := whyXRay
		if f.fn == s.fns.scheduler {
			why = whyXRayAndStreams
		}
		add(f.fn.Role(), true, "AwsSolutions-IAM5", why, "Resource::*")
		if f.fn != s.fns.supervisor {
			add(f.fn, false, "Serverless-LambdaDLQ", whySyncInvoked)
		} else {
			add(f.fn, true, "Serverless-LambdaAsyncFailureDestination", whyAsyncDLQ)
		}
		for _, child := range *f.fn.Node().Children() {
			if strings.HasPrefix(*child.Node().Id(), "SqsEventSource:") {
				add(child, true, "Serverless-LambdaEventSourceMappingDestination", whySQSMapping)
			}
		}
	}
	for _, q := range s.msg.deadLetters {
		add(q, false, "Serverless-SQSRedrivePolicy", whyDeadLetter)
	}
	for _, q := range []awssqs.Queue{s.msg.streamFailures, s.msg.scheduleFailures} {
		add(q, false, "AwsSolutions-SQS3", whyStandaloneDLQ)
	}
	add(s.api, true, "AwsSolutions-COG4", whyIAMAuth)
	add(s.data.pageTokenKey, false, "AwsSolutions-SMG4", whyPageTokenKey)
	add(s.data.callbackKey, false, "AwsSolutions-SMG4", whyCallbackKey)
	// The stage's logical id changes with the stage name, hence regexes.
	add(s.clientPolicy, false, "AwsSolutions-IAM5", whyOrderIDs+"; "+whyWorkflowNames, `/^Resource::arn:.*:execute-api:.*\/GET\/orders\/\*$/`,
		`/^Resource::arn:.*:execute-api:.*\/POST\/orders\/\*\/cancel$/`, `/^Resource::arn:.*:execute-api:.*\/POST\/workflows\/\*\/orders$/`,
		`/^Resource::arn:.*:execute-api:.*\/POST\/orders\/\*\/events\/\*$/`)
	add(s.operatorPolicy, false, "AwsSolutions-IAM5", whyOrderIDs, `/^Resource::arn:.*:execute-api:.*\/GET\/ops\/orders\/\*$/`,
		`/^Resource::arn:.*:execute-api:.*\/POST\/orders\/\*\/redrive$/`, `/^Resource::arn:.*:execute-api:.*\/POST\/ops\/orders\/\*\/events\/\*$/`)
	if s.callbacks != nil {
		add(s.callbacks, false, "AwsSolutions-APIG4", whyCallbackToken)
		add(s.callbacks, false, "AwsSolutions-COG4", whyCallbackToken)
	}
	add(s.api, true, "AwsSolutions-IAM4", whyAPILogsRole,
		"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")
}

package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/resources"
)

// newOperatorTools is the policy of the operators' own tools: the orderly
// CLI and its console, which work on the tables and queues directly with
// the operator's credentials. The role check proves it against the calls
// the tools make (TestOperatorToolsPolicyAllowsExactlyTheToolsCalls).
func newOperatorTools(s *Stack) awsiam.ManagedPolicy {
	d, m := s.data, s.msg
	var statements []awsiam.PolicyStatement
	grant := func(actions []string, resources ...*string) {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(actions...), Resources: &resources,
		}))
	}
	orders, history := d.orders.TableArn(), d.history.TableArn()
	index := func(table *string, name string) *string { return jsii.String(*table + "/index/" + name) }
	// Reading: show and watch (an order), list (the due and error
	// indexes, then the orders they name), search (the search indexes,
	// then the status of the running orders they name), history and
	// alerts.
	grant([]string{"dynamodb:GetItem", "dynamodb:BatchGetItem"}, orders)
	grant([]string{"dynamodb:Query"}, index(orders, resources.DueIndexName), index(orders, resources.ErrorIndexName),
		index(orders, resources.CreatedIndexName), index(orders, resources.EndedIndexName))
	grant([]string{"dynamodb:Query"}, history, index(history, resources.AlertIndexName))
	// Changing: cancel, redrive and move, each one fenced UpdateItem.
	grant([]string{"dynamodb:UpdateItem"}, orders)

	// The dead-letter queues: listed with their depth, shown (a receive
	// that puts each message back), and, for those of a work queue, moved
	// back to it (send there, delete here).
	sources := []awssqs.Queue{m.responses}
	for _, agent := range s.agents() {
		sources = append(sources, m.requests[agent])
	}
	var dlqs, moved, back []*string
	for _, q := range m.deadLetters {
		dlqs = append(dlqs, q.QueueArn())
	}
	for _, q := range sources {
		back = append(back, q.QueueArn())
		moved = append(moved, q.DeadLetterQueue().Queue.QueueArn())
	}
	grant([]string{"sqs:GetQueueUrl", "sqs:GetQueueAttributes"}, dlqs...)
	grant([]string{"sqs:GetQueueUrl"}, back...)
	grant([]string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility"}, dlqs...)
	grant([]string{"sqs:DeleteMessage"}, moved...)
	grant([]string{"sqs:SendMessage"}, back...)

	return awsiam.NewManagedPolicy(s.Stack, jsii.String("OperatorToolsPolicy"), &awsiam.ManagedPolicyProps{
		ManagedPolicyName: jsii.String("orderly-" + s.props.Stage + "-operator-tools"),
		Description:       jsii.String("the orderly CLI and console: read every order, its history and alerts; cancel, redrive and move orders; show and redrive dead letters"),
		Document:          awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
	})
}

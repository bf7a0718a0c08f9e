package faults_test

import (
	"testing"

	"orderly/internal/local/faults"
)

func TestPointNamesWhereACrashFalls(t *testing.T) {
	tests := []struct {
		service, operation, target string
		want                       string
	}{
		{"SQS", "SendMessage", "orderly-dev-payment-requests", "between claim and send"},
		{"SQS", "SendMessage", "orderly-dev-responses", "between remote success and reply"},
		{"SNS", "Publish", "", "between an Error write and its alert"},
		{"DynamoDB", "TransactWriteItems", "", "before an order is written"},
		{"DynamoDB", "PutItem", "", "before an order is written"},
		{"DynamoDB", "UpdateItem", "", "before a state write"},
		{"DynamoDB", "Query", "", "before a read"},
		{"DynamoDB", "BatchGetItem", "", "before a read"},
		{"DynamoDB", "GetItem", "", "before a read"},
		{"SQS", "GetQueueAttributes", "", "before a backlog read"},
		{"SQS", "DeleteMessage", "", "before SQS DeleteMessage"},
	}
	for _, tt := range tests {
		if got := faults.Point(tt.service, tt.operation, tt.target); got != tt.want {
			t.Errorf("Point(%q, %q, %q) = %q, want %q", tt.service, tt.operation, tt.target, got, tt.want)
		}
	}
}

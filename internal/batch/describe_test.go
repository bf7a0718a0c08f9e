package batch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/batch"
)

// A message is described by its id, deliveries and size, never its body,
// which carries the order's input.
func TestDescribeNeverLogsTheBody(t *testing.T) {
	msg := events.SQSMessage{MessageId: "m-1", Body: `{"input":{"paymentToken":"tok_secret_4242"}`,
		Attributes: map[string]string{"ApproximateReceiveCount": "3"}}
	got := fmt.Sprint(batch.Describe(msg))
	if strings.Contains(got, "tok_secret_4242") || !strings.Contains(got, "m-1") || !strings.Contains(got, "body_bytes") {
		t.Errorf("Describe = %s, want the id and the size, not the body", got)
	}
}

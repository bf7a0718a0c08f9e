package sqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/adapter/sqs"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// sent records the messages sent, and answers nothing else.
type sent struct{ messages []*awssqs.SendMessageInput }

func (s *sent) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	s.messages = append(s.messages, in)
	return &awssqs.SendMessageOutput{}, nil
}

func (s *sent) GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error) {
	return &awssqs.GetQueueAttributesOutput{}, nil
}

// A request carries the order's input and results as they were written:
// escaping "<", ">" and "&" as HTML does would make each six bytes, and a
// request that fits the bound Validate checks (definition.Sizes) could
// outgrow an SQS message.
func TestRequestCarriesJSONAsWritten(t *testing.T) {
	input := json.RawMessage(`{"customerId":"<a & b>","note":"x\u2028y"}`)
	result := json.RawMessage(`{"id":"r<1>","memo":"a&b"}`)
	req := order.StepRequest{OrderID: order.NewID(), Step: "charge", Attempt: 1, CompleteBy: time.Now(), IdempotencyKey: "k",
		Input: input, Results: map[string]json.RawMessage{"reserve": result}}
	client := &sent{}
	if err := sqs.NewRequests(client, map[string]string{"payment": "q"}).SendRequest(t.Context(), "payment", req); err != nil {
		t.Fatal(err)
	}
	if len(client.messages) != 1 {
		t.Fatalf("%d messages sent, want 1", len(client.messages))
	}
	body := []byte(*client.messages[0].MessageBody)
	for _, want := range []json.RawMessage{input, result} {
		if !bytes.Contains(body, want) {
			t.Errorf("body %s does not carry %s as written", body, want)
		}
	}
	got, err := order.DecodeRequest(body)
	if err != nil || !bytes.Equal(got.Input, input) {
		t.Errorf("decoded %s, %v; want the input %s", got.Input, err, input)
	}
}

// SQS refuses a message holding U+FFFE or U+FFFF, which a client's input
// or a service's result may carry: they go as JSON escapes, and the
// request decodes to the same input and results.
func TestRequestCarriesNoCharacterSQSRefuses(t *testing.T) {
	input := json.RawMessage("{\"note\":\"a\uFFFEb\uFFFFc\u00e9\U0001F600\"}")
	result := json.RawMessage("{\"id\":\"r\uFFFF\"}")
	req := order.StepRequest{OrderID: order.NewID(), Step: "charge", Attempt: 1, CompleteBy: time.Now(), IdempotencyKey: "k",
		Input: input, Results: map[string]json.RawMessage{"reserve": result}}
	client := &sent{}
	if err := sqs.NewRequests(client, map[string]string{"payment": "q"}).SendRequest(t.Context(), "payment", req); err != nil {
		t.Fatal(err)
	}
	body := *client.messages[0].MessageBody
	for _, r := range body {
		if !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			t.Errorf("the message holds %U, which SQS refuses: %q", r, body)
		}
	}
	got, err := order.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var in, want, res, wantRes map[string]string
	for _, p := range []struct {
		raw json.RawMessage
		to  *map[string]string
	}{{got.Input, &in}, {input, &want}, {got.Results["reserve"], &res}, {result, &wantRes}} {
		if err := json.Unmarshal(p.raw, p.to); err != nil {
			t.Fatal(err)
		}
	}
	if in["note"] != want["note"] || res["id"] != wantRes["id"] {
		t.Errorf("decoded %q and %q, want %q and %q", in["note"], res["id"], want["note"], wantRes["id"])
	}
}

// A message carries its sender's traceparent as an attribute when tracing
// is on, so its consumer's span is the sender's child, and none when off.
func TestMessageCarriesTheSendersTraceparent(t *testing.T) {
	tests := []struct {
		name string
		on   bool
	}{{"tracing off", false}, {"tracing on", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			want := ""
			if tt.on {
				tracing.Use(sdktrace.NewTracerProvider())
				t.Cleanup(func() { tracing.Use(nil) })
				var span trace.Span
				ctx, span = tracing.Start(ctx, "dispatch.request", tracing.Step{OrderID: "ord-1"})
				defer span.End()
				want = tracing.Traceparent(ctx)
			}
			client := &sent{}
			rep := order.StepReply{OrderID: "ord-1", Step: "pay", Attempt: 1, Outcome: order.OutcomeSucceeded}
			if err := sqs.NewReplies(client, "q").SendReply(ctx, rep); err != nil {
				t.Fatal(err)
			}
			attr, ok := client.messages[0].MessageAttributes["traceparent"]
			if got := aws.ToString(attr.StringValue); ok != tt.on || got != want {
				t.Errorf("traceparent attribute %q (set: %t), want %q", got, ok, want)
			}
		})
	}
}

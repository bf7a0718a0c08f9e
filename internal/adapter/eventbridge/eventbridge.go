// Package eventbridge is the EventBridge adapter: it publishes order
// status changes on the stack's event bus, where clients subscribe with
// rules of their own.
package eventbridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// Client is the part of the EventBridge API the publisher uses.
type Client interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Publisher puts status events on one bus.
type Publisher struct {
	client Client
	bus    string
}

// NewPublisher returns a publisher for the bus.
func NewPublisher(client Client, bus string) *Publisher {
	return &Publisher{client: client, bus: bus}
}

// Publish puts one status change on the bus: source "orderly",
// detail-type "Order <status>", the change as detail.
func (p *Publisher) Publish(ctx context.Context, c order.StatusChange) error {
	what := fmt.Sprintf("status %s of order %s", c.Status, c.OrderID)
	return p.put(ctx, what, resources.EventSource, resources.EventTypePrefix+string(c.Status), c)
}

// PublishPause puts one pause's change on the bus: source
// "orderly.operator" (not clients' "orderly": it names the operator),
// detail-type "Pause <event>" (paused, pause changed, resumed), the
// change as detail, for operators' rules.
func (p *Publisher) PublishPause(ctx context.Context, c order.PauseChange) error {
	what := fmt.Sprintf("%s of %s", c.Event, c.Pause.Subject())
	return p.put(ctx, what, resources.OperatorEventSource, resources.PauseEventTypePrefix+c.Event, c)
}

func (p *Publisher) put(ctx context.Context, what, source, detailType string, v any) error {
	detail, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event of %s: %w", what, err)
	}
	out, err := p.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(p.bus),
		Source:       aws.String(source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(detail)),
		Resources:    []string{},
	}}})
	if err != nil {
		return fmt.Errorf("publish %s: %w", what, err)
	}
	if out.FailedEntryCount > 0 && len(out.Entries) > 0 {
		e := out.Entries[0]
		return fmt.Errorf("publish %s: %s: %s", what, aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
	}
	return nil
}

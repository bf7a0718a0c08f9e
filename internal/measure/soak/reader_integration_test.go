package soak

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// The soak's status-event reader reads until every terminal order's final
// status has its event, however late it comes. A CI run once reported a
// Processed order without its event, most likely because the soak had
// stopped reading too early, in one of the two ways this test plays on
// moto's queue.
func TestEventReaderReadsEveryFinalStatus(t *testing.T) {
	cfg := testenv.AWS(t)
	clients := testenv.Clients(cfg)
	ctx := context.Background()
	tests := []struct {
		name string
		// arrive has the order's event sent and returns once the
		// reader's background reading has stopped.
		arrive func(r *eventReader, send func(after time.Duration))
		// within bounds how long the reader may take to see it.
		within time.Duration
	}{
		{
			// The recorder publishes after the write the soak saw, and
			// after a kill -9 late in the run only once the runtime is
			// back: seconds after the queue was last quiet.
			name: "published after the reading stopped, a recorder catching up",
			arrive: func(r *eventReader, send func(after time.Duration)) {
				readCtx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { r.run(readCtx); close(done) }()
				stop()
				<-done
				send(6 * time.Second)
			},
			within: 30 * time.Second,
		},
		{
			// moto goes on polling for a receive whose client gave up,
			// and hides what it hands to it for the queue's visibility
			// timeout (3 minutes for the status queue).
			name: "published while a receive was cut short",
			arrive: func(r *eventReader, send func(after time.Duration)) {
				readCtx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { r.once(readCtx); close(done) }()
				time.Sleep(300 * time.Millisecond) // the receive is polling
				stop()
				send(0)
				<-done
			},
			within: 10 * time.Second,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := resources.New(testenv.Stage(t), nil)
			made, err := clients.Deliveries.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(cat.StatusQueue.Name),
				Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(cat.StatusQueue.VisibilityTimeout.Seconds()))}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = clients.Deliveries.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: made.QueueUrl})
			})
			r, err := newEventReader(ctx, Env{Clients: clients, Stage: cat.Stage}, cat)
			if err != nil {
				t.Fatal(err)
			}
			id := "order-" + strconv.Itoa(i)
			body, _ := json.Marshal(map[string]any{"detail-type": "Order Processed", "detail": order.StatusChange{OrderID: id, Status: order.StatusProcessed}})
			var sending sync.WaitGroup
			send := func(after time.Duration) {
				sending.Go(func() {
					time.Sleep(after)
					if _, err := clients.Deliveries.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: made.QueueUrl, MessageBody: aws.String(string(body))}); err != nil {
						t.Errorf("send the event: %v", err)
					}
				})
			}
			tt.arrive(r, send)
			began := time.Now()
			seen := r.finish(ctx, map[string]order.Order{id: {Status: order.StatusProcessed}}, time.Minute)
			took := time.Since(began)
			sending.Wait()
			if !seen[id][order.StatusProcessed] || took > tt.within {
				t.Errorf("after %s the reader saw %v; want order %s's Processed event within %s", took.Round(time.Millisecond), seen, id, tt.within)
			}
		})
	}
}

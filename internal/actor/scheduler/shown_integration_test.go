package scheduler_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/testkit/testenv"
)

// watcher follows one order the way the recorder does (history and status
// events from its stream records) and reads everything clients and
// operators are shown of it.
type watcher struct {
	w   *testenv.World
	id  string
	rec *testenv.Recording
	// events are the bodies of the status events published so far.
	events []string
}

// watch records the order's submission.
func watch(t *testing.T, w *testenv.World, id string) *watcher {
	t.Helper()
	o := &watcher{w: w, id: id, rec: w.Follow(id)}
	o.record(t)
	return o
}

// record records the order's change since the last one recorded, as its
// stream record would deliver it.
func (o *watcher) record(t *testing.T) { t.Helper(); o.rec.Record(t) }

// shown returns, by where it is shown, what clients and operators read of
// the order: its views and histories through the API (the console and
// the CLI show the same views), and its status events.
func (o *watcher) shown(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, resource := range []string{api.ResourceOrder, api.ResourceOperatorOrder, api.ResourceHistory, api.ResourceOperatorHistory} {
		resp, err := o.w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
			HTTPMethod: http.MethodGet, Resource: resource, Path: strings.Replace(resource, "{id}", o.id, 1),
			PathParameters: map[string]string{"id": o.id}, RequestContext: testenv.As(testenv.Caller),
		})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s of order %s: status %d, %v", resource, o.id, resp.StatusCode, err)
		}
		out["GET "+resource] = resp.Body
	}
	o.events = append(o.events, o.w.StatusEvents(t)...)
	if len(o.events) == 0 {
		t.Fatalf("no status event of order %s was published", o.id)
	}
	out["status events"] = strings.Join(o.events, "\n")
	return out
}

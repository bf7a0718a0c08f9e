package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"orderly/internal/adapter/services"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
)

// A services configuration the engine cannot use is refused before
// anything is provisioned (no AWS endpoint is needed to see it).
func TestEngineRefusesServicesItCannotUse(t *testing.T) {
	warehouse := ordertest.OrderWorkflow(enginetest.Fast)
	warehouse.Name = "shop"
	warehouse.Steps[0].Agent, warehouse.Steps[0].Call.Path, warehouse.Steps[0].UndoCall.Path = "warehouse", "/holds", "/holds/release"
	for _, tt := range []struct {
		name      string
		remoteURL string
		services  services.Config
		workflows order.Versions
		want      string
	}{
		{"a service no workflow calls", "", services.Config{"paymnet": {URL: "http://127.0.0.1:1", Auth: services.Auth{Type: services.AuthNone}}},
			order.Versions{}, `services: paymnet: no workflow calls a service "paymnet"`},
		{"a remote URL that would go unauthenticated", "https://remote.example.com", nil,
			order.Versions{}, `services: inventory: not configured, and the remote URL "https://remote.example.com" is not a loopback http(s) URL`},
		// A team's new service, forgotten in ORDERLY_SERVICES: the
		// simulator would answer 404, and the orders would wait unseen.
		{"calls the simulator does not serve", "", nil, order.MustVersions(warehouse),
			"the simulator does not serve them: workflow shop version 1, step reserve-inventory: POST /holds; " +
				"workflow shop version 1, step reserve-inventory: POST /holds/release; give their agents a service in ORDERLY_SERVICES"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := engine.New(context.Background(), aws.Config{}, engine.Config{Stage: "never-provisioned", APIAddr: "127.0.0.1:0",
				SimulatorAddr: "127.0.0.1:0", Timing: enginetest.Fast, RemoteURL: tt.remoteURL, Services: tt.services, Workflows: tt.workflows})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %s", err, tt.want)
			}
		})
	}
}

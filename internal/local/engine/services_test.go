package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"orderly/internal/adapter/services"
	"orderly/internal/local/engine"
	"orderly/internal/testkit/enginetest"
)

// A services configuration the engine cannot use is refused before
// anything is provisioned (no AWS endpoint is needed to see it).
func TestEngineRefusesServicesItCannotUse(t *testing.T) {
	for _, tt := range []struct {
		name      string
		remoteURL string
		services  services.Config
		want      string
	}{
		{"a service no workflow calls", "", services.Config{"paymnet": {URL: "http://127.0.0.1:1", Auth: services.Auth{Type: services.AuthNone}}},
			`services: paymnet: no workflow calls a service "paymnet"`},
		{"a remote URL that would go unauthenticated", "https://remote.example.com", nil,
			`services: inventory: not configured, and the remote URL "https://remote.example.com" is not a loopback http(s) URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := engine.New(context.Background(), aws.Config{}, engine.Config{Stage: "never-provisioned", APIAddr: "127.0.0.1:0",
				SimulatorAddr: "127.0.0.1:0", Timing: enginetest.Fast, RemoteURL: tt.remoteURL, Services: tt.services})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %s", err, tt.want)
			}
		})
	}
}

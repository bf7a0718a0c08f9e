package remote_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/services"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// A header authentication against a real HTTP service that checks the
// header, with its value in a real Secrets Manager (the emulator's): the
// value is fetched once, and after a rotation, which the service takes at
// once, the very next call passes.
func TestHeaderAuthReadsAndRotatesARealSecret(t *testing.T) {
	cfg := testenv.AWS(t)
	name := "orderly-" + testenv.Stage(t) + "-payment-api-key"
	rotate := testenv.Secret(t, cfg, name, "first-key")
	var fetches atomic.Int32
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetOperationName(ctx) == "GetSecretValue" {
				fetches.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	})

	svc := &keyedService{}
	svc.key.Store("first-key")
	ts := httptest.NewServer(svc)
	defer ts.Close()
	conf := services.Config{"payment": {URL: ts.URL, Auth: services.Auth{Type: services.AuthHeader, Header: "X-Api-Key", Secret: name}}}
	client := remote.NewClientFor(remote.ServicesFrom(conf, cfg), ts.Client(), shipped)
	ctx := context.Background()
	for _, key := range []string{"k1", "k2"} {
		if _, err := client.Call(ctx, "payment", stepRequest(key)); err != nil {
			t.Fatalf("call %s: %v", key, err)
		}
	}
	if got := fetches.Load(); got != 1 {
		t.Errorf("%d fetches for two calls, want 1 (cached)", got)
	}

	rotate("second-key")
	svc.key.Store("second-key")
	if _, err := client.Call(ctx, "payment", stepRequest("k3")); err != nil {
		t.Fatalf("the call after the rotation: %v", err)
	}
	if got := fetches.Load(); got != 2 {
		t.Errorf("%d fetches, want 2: the service's 401 fetched the rotated value", got)
	}
	if got := svc.requests.Load(); got != 4 {
		t.Errorf("the service saw %d requests, want 4 (k1, k2, k3 refused with the old value, k3 again)", got)
	}

	// A secret that is not there is a transient fault naming it.
	missing := services.Config{"payment": {URL: ts.URL, Auth: services.Auth{Type: services.AuthHeader, Header: "X-Api-Key", Secret: name + "-missing"}}}
	_, err := remote.NewClientFor(remote.ServicesFrom(missing, cfg), ts.Client(), shipped).Call(ctx, "payment", stepRequest("k4"))
	if !errors.Is(err, order.ErrTransient) {
		t.Errorf("got %v, want a transient fault", err)
	}
	t.Logf("a missing secret: %v", err)
}

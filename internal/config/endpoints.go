package config

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// localEndpoints are the services of a local run with the endpoint the
// SDK resolved for each from cfg (AWS_ENDPOINT_URL_<SERVICE> or
// AWS_ENDPOINT_URL); a service left to AWS's own endpoints is not listed.
func localEndpoints(cfg aws.Config) []struct{ service, endpoint string } {
	var out []struct{ service, endpoint string }
	for _, s := range []struct {
		service  string
		endpoint *string
	}{
		{"DynamoDB", dynamodb.NewFromConfig(cfg).Options().BaseEndpoint},
		{"SQS", sqs.NewFromConfig(cfg).Options().BaseEndpoint},
		{"SNS", sns.NewFromConfig(cfg).Options().BaseEndpoint},
		{"EventBridge", eventbridge.NewFromConfig(cfg).Options().BaseEndpoint},
		{"Secrets Manager", secretsmanager.NewFromConfig(cfg).Options().BaseEndpoint},
	} {
		if s.endpoint != nil {
			out = append(out, struct{ service, endpoint string }{s.service, *s.endpoint})
		}
	}
	return out
}

// CheckEndpoints fails, in one line naming the service and its port, when
// an endpoint the configuration sets does not take connections: an
// emulator that is not running, or that died, would otherwise show as the
// SDK's retries giving up minutes later, deep in some first request.
func CheckEndpoints(ctx context.Context, cfg aws.Config) error {
	var d net.Dialer
	for _, s := range localEndpoints(cfg) {
		u, err := url.Parse(s.endpoint)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%s endpoint %q is not a URL", s.service, s.endpoint)
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := d.DialContext(dctx, "tcp", host)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: nothing answers on %s (%s): start the emulators with `make emulators` (if one is stuck or its port is taken: `make stop`, then again)", s.service, host, s.endpoint)
		}
		conn.Close()
	}
	return nil
}

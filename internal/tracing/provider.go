package tracing

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The variables tracing is turned on and tuned with. The exporter reads
// the other standard OTEL_EXPORTER_OTLP_* variables itself (headers,
// timeout, a traces-only endpoint), and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
const (
	// EnvEndpoint set turns tracing on: spans go to this OTLP/HTTP
	// receiver (a collector, the ADOT Lambda layer's, Jaeger...).
	EnvEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	// EnvSample is the share of orders traced, from 0 to 1 (default 1).
	// The decision is the order's, taken on its trace id, so an order is
	// traced by every actor or by none.
	EnvSample = "ORDERLY_TRACE_SAMPLE"
)

// Provider is the tracing a function runs with: off (the zero value), or
// an OTLP/HTTP exporter behind a batch processor.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// FromEnv builds service's tracing from the environment (getenv): off
// without EnvEndpoint or EnvXRay; else exporting to the one set (to
// X-Ray signed with cfg's credentials, in cfg's region), sampling
// EnvSample of the orders. It makes the provider the one spans start in
// (Use).
func FromEnv(ctx context.Context, service string, getenv func(string) string, cfg aws.Config) (*Provider, error) {
	endpoint, xray := getenv(EnvEndpoint), getenv(EnvXRay)
	if endpoint == "" && xray == "" {
		return &Provider{}, nil
	}
	if endpoint != "" && xray != "" {
		return nil, errors.New("tracing: " + EnvEndpoint + " and " + EnvXRay + " are both set: set one, the receiver spans go to")
	}
	ratio, err := sampleRatio(getenv(EnvSample))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	var opts []otlptracehttp.Option
	if xray != "" {
		if opts, err = xrayExport(xray, cfg); err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		endpoint = xray
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter to %s: %w", endpoint, err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	p := &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(Sampler(ratio)))}
	Use(p.sdk)
	return p, nil
}

// Sampler samples ratio of the orders. Every span of an order either
// continues a parent of this process or hangs from a remote one (a
// message's traceparent, or the order's own trace id), and on a remote
// parent it decides on the trace id alone: the same for every actor of
// one order, whatever the flags the parent carried.
func Sampler(ratio float64) sdktrace.Sampler {
	byOrder := sdktrace.TraceIDRatioBased(ratio)
	return sdktrace.ParentBased(byOrder, sdktrace.WithRemoteParentSampled(byOrder), sdktrace.WithRemoteParentNotSampled(byOrder))
}

// Flush exports the spans ended so far: at the end of each Lambda
// invocation, as the execution environment may be frozen, or killed,
// before the batch's timer fires. Off, it does nothing.
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	if err := p.sdk.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return nil
}

// Shutdown exports what is left and stops the exporter: when `make run`
// stops. Off, it does nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	Use(nil)
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shut down: %w", err)
	}
	return nil
}

// Flushing is handle, flushing p's spans after each invocation; with
// tracing off, handle itself. A flush that fails costs spans, never the
// invocation.
func Flushing[In, Out any](p *Provider, handle func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if p == nil || p.sdk == nil {
		return handle
	}
	return func(ctx context.Context, in In) (Out, error) {
		out, err := handle(ctx, in)
		_ = p.Flush(ctx) // the exporter reports its errors through otel.Handle
		return out, err
	}
}

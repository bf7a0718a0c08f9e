package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"orderly/internal/order"
	"orderly/internal/tracing"
)

// The calls of a step whose service is polled (order.StepDef.Poll), the
// Asynchronous Request-Reply pattern: the call is accepted with 202, a
// Location (the status URL) and optionally Retry-After; each check GETs
// the status URL with the service's credential, which answers 202 while
// the work goes on, 200 with the step's answer when it is done (or 302 or
// 303 to where the answer is), and a 4xx when it failed.
//
// A status URL must be under the service's own base URL: the credential
// goes with every check, so a service cannot send it elsewhere. Its text
// may carry a token of the service's, so no error, log or reply names
// more of it than the service's host.

// accepted reads a polled call's 202: its Location, resolved against the
// call's URL and under ep's base, and its Retry-After. A 202 without a
// usable Location is a contract fault: the work may have been taken, and
// nothing says how it goes.
func accepted(op string, ep *endpoint, def order.StepDef, resp *http.Response) (order.Answer, error) {
	status, err := ep.statusURL(resp)
	if err != nil {
		return order.Answer{}, fmt.Errorf("%s: status 202: %w: %w", op, &order.ContractError{Service: def.Agent, Step: def.Name, Problem: err.Error()}, order.ErrContract)
	}
	after, _ := parseRetryAfter(resp.Header)
	return order.Answer{Accepted: true, StatusURL: status, RetryAfter: after}, nil
}

// check GETs req's status URL once: the work goes on (Accepted, with a
// new status URL when the service moved it), is done (the step's
// answer), or failed (a fault, classified as a call's is). A redirect
// (302, 303) points to the answer, which is read with one more GET.
func (c *Client) check(ctx context.Context, service string, ep *endpoint, wf order.Workflow, def order.StepDef, req order.StepRequest) (order.Answer, error) {
	op := service + ": GET its status URL"
	target, err := ep.under(req.Poll)
	if err != nil {
		// Checked when the call was accepted: the service's base URL
		// changed since. Not the order's fault, and no check helps.
		return order.Answer{}, fmt.Errorf("%s: %w: %w", op, err, order.ErrConfiguration)
	}
	resp, raw, over, err := ep.get(ctx, op, target, req.IdempotencyKey)
	if err != nil {
		return order.Answer{}, err
	}
	switch resp.StatusCode {
	case http.StatusAccepted:
		next := ""
		if _, err := resp.Location(); err == nil {
			if next, err = ep.statusURL(resp); err != nil {
				return order.Answer{}, fmt.Errorf("%s: status 202: %w: %w", op, &order.ContractError{Service: def.Agent, Step: def.Name, Problem: err.Error()}, order.ErrContract)
			}
		}
		after, _ := parseRetryAfter(resp.Header)
		return order.Answer{Accepted: true, StatusURL: next, RetryAfter: after}, nil
	case http.StatusFound, http.StatusSeeOther:
		result, err := ep.statusURL(resp)
		if err != nil {
			return order.Answer{}, fmt.Errorf("%s: status %d: %w: %w", op, resp.StatusCode, &order.ContractError{Service: def.Agent, Step: def.Name,
				Problem: "points to its answer " + err.Error()}, order.ErrContract)
		}
		op = service + ": GET the answer its status URL points to"
		if resp, raw, over, err = ep.get(ctx, op, result, req.IdempotencyKey); err != nil {
			return order.Answer{}, err
		}
	}
	return c.respond(op, service, wf, def, req, resp, raw, over)
}

// get GETs target (under ep's base) with the step's Idempotency-Key, so
// the service can find the work, and reads at most maxResponseBytes of
// the answer (over: there was more). A failure to get an answer is
// transient, told without the URL.
func (ep *endpoint) get(ctx context.Context, op, target, key string) (*http.Response, []byte, bool, error) {
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%s: %w: %w", op, err, order.ErrConfiguration)
	}
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("Idempotency-Key", key)
	tracing.Inject(ctx, httpReq.Header)
	resp, err := ep.http.Do(httpReq)
	if err != nil {
		// Go's error names the URL, which may carry the service's token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, false, transportError(ctx, op, err)
	}
	defer resp.Body.Close()
	tracing.StatusCode(ctx, resp.StatusCode)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, nil, false, transportError(ctx, op, fmt.Errorf("read response: %w", err))
	}
	return resp, raw[:min(len(raw), maxResponseBytes)], len(raw) > maxResponseBytes, nil
}

// statusURL is resp's Location, resolved against its request's URL, when
// it is a URL ep may call (see under).
func (ep *endpoint) statusURL(resp *http.Response) (string, error) {
	loc, err := resp.Location()
	if err != nil {
		return "", errors.New("has no usable Location header: a polled service answers 202 with the URL of the work's status in Location")
	}
	return ep.under(loc.String())
}

// under returns raw, an absolute URL, when it is under ep's base URL:
// the same scheme and host, a path in the base's, no user or fragment,
// at most order.MaxStatusURLBytes of printable ASCII. The problem never
// quotes the URL.
func (ep *endpoint) under(raw string) (string, error) {
	base, err := url.Parse(ep.base)
	if err != nil {
		return "", fmt.Errorf("the service's base URL does not parse: %w", err)
	}
	u, err := url.Parse(raw)
	basePath := strings.TrimSuffix(base.EscapedPath(), "/")
	switch {
	case len(raw) > order.MaxStatusURLBytes:
		return "", fmt.Errorf("is a URL of %d bytes, over the %d orderly keeps", len(raw), order.MaxStatusURLBytes)
	case strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		return "", errors.New("is a URL with a character other than printable ASCII")
	case err != nil || !u.IsAbs():
		return "", errors.New("is not an absolute URL")
	case u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host):
		return "", fmt.Errorf("is on %s, not under the service's base URL: the check carries the service's credential, so it goes to the service's own host only", order.Cut(u.Host, 64))
	case u.User != nil || u.Fragment != "":
		return "", errors.New("has a user or a fragment, which a status URL has no use for")
	case u.EscapedPath() != basePath && !strings.HasPrefix(u.EscapedPath(), basePath+"/"):
		return "", errors.New("is on the service's host but not under its base URL's path")
	}
	return u.String(), nil
}

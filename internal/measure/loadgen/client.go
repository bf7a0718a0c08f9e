package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"orderly/internal/order"
)

// DefaultBody is the order submitted when the user names none: one book
// for the shipped workflow, which every step processes on the simulator.
const DefaultBody = `{"customerId":"c-load","lines":[{"sku":"BOOK-1","quantity":1}]}`

// DefaultPath is where orders of the stage's default workflow are submitted.
const DefaultPath = "/orders"

// Client submits and reads orders over orderly's public HTTP API.
type Client struct {
	base string // scheme://host[:port][/base path], no trailing slash
	path string
	body []byte
	http *http.Client
}

// NewClient returns a client of the API at baseURL that submits body to
// path. A nil hc gets a client that keeps enough connections open for
// conns requests at once, so a burst does not open one per request.
// Its error names every argument that is wrong.
func NewClient(baseURL, path string, body []byte, hc *http.Client, conns int) (*Client, error) {
	var errs []error
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url %q: %w", baseURL, err))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want http://host:port or https://host", baseURL))
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("url %q: no query or fragment, please", baseURL))
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, fmt.Errorf("path %q: want an absolute path such as /orders or /workflows/checkout/orders", path))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		errs = append(errs, fmt.Errorf("body: want one JSON object, as POST %s takes: %v", path, cmpErr(err, "got null")))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(conns, 2)
		hc = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), path: path, body: body, http: hc}, nil
}

func cmpErr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// Reachable reports an error when nothing answers at the API's address
// (any HTTP answer will do).
func (c *Client) Reachable(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/openapi.json", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("nothing answers at %s: %w", c.base, err)
	}
	resp.Body.Close()
	return nil
}

// Submit places one order with the given Idempotency-Key and returns its
// id. Anything but a 202 with an order id is an error, which quotes the
// start of the API's answer.
func (c *Client) Submit(ctx context.Context, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+c.path, bytes.NewReader(c.body))
	if err != nil {
		return "", fmt.Errorf("POST %s: %w", c.path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s: %w", c.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("POST %s: read the answer: %w", c.path, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST %s answered %s: %s", c.path, resp.Status, excerpt(data))
	}
	var got struct {
		OrderID string `json:"orderId"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.OrderID == "" {
		return "", fmt.Errorf("POST %s answered 202 without an orderId: %s", c.path, excerpt(data))
	}
	return got.OrderID, nil
}

// Seen is an order as one GET showed it.
type Seen struct {
	Status order.Status
	// UpdatedAt is the time of the order's last write, by the engine's
	// clock: for a terminal order, when it became terminal.
	UpdatedAt time.Time
}

// Order reads an order's status with GET /orders/{id}.
func (c *Client) Order(ctx context.Context, id string) (Seen, error) {
	path := "/orders/" + url.PathEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return Seen{}, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Seen{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Seen{}, fmt.Errorf("GET %s: read the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Seen{}, fmt.Errorf("GET %s answered %s: %s", path, resp.Status, excerpt(data))
	}
	var got struct {
		Status    order.Status `json:"status"`
		UpdatedAt time.Time    `json:"updatedAt"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.Status == "" {
		return Seen{}, fmt.Errorf("GET %s answered 200 without a status: %s", path, excerpt(data))
	}
	return Seen(got), nil
}

// excerpt is the start of an answer, enough to quote in an error.
func excerpt(data []byte) string {
	const limit = 300
	s := strings.TrimSpace(string(data))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}

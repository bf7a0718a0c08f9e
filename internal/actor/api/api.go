// Package api is the submission function: POST /orders writes an order and
// its workflow state in one conditional write and sends the first step's
// request; GET /orders/{id} shows the caller its order and every step's
// state (an operator's GET /ops/orders/{id} shows any order with the
// engine's internals and every step's result); GET /orders finds the
// caller's orders (and an operator's GET /ops/orders anyone's); POST
// /orders/{id}/cancel cancels it and an operator's POST
// /orders/{id}/redrive resumes it from Error. It speaks API Gateway REST
// (v1) proxy events.
package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"orderly/internal/actor/control"
	"orderly/internal/callbacktoken"
	"time"

	"orderly/internal/definition"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
	"orderly/internal/pausecache"
)

// Store is what the API needs of the state store.
type Store interface {
	CreateOrder(ctx context.Context, o order.Order, steps []order.StepState) (order.Order, error)
	GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error)
	// Search returns a page of the orders q matches, newest first, from
	// position (nil: the first page).
	Search(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error)
}

// Controls cancels and redrives orders.
type Controls interface {
	Cancel(ctx context.Context, owner order.Principal, id string) (order.Order, error)
	Redrive(ctx context.Context, id, action string) (order.Order, error)
	SendEvent(ctx context.Context, by order.Principal, operator bool, id, name string, data json.RawMessage) (order.Order, error)
	Callback(ctx context.Context, c callbacktoken.Claim, cb order.Callback) (control.Taken, error)
}

// History reads an order's history.
type History interface {
	List(ctx context.Context, orderID string, since time.Time) ([]order.HistoryEntry, error)
}

// Dispatcher sends the first step's request, which submission claims.
type Dispatcher interface {
	Send(ctx context.Context, o order.Order, st order.StepState)
}

// Service handles API Gateway proxy requests.
type Service struct {
	id         string // LockedBy of the first steps this instance claims
	store      Store
	controls   Controls
	history    History
	dispatcher Dispatcher
	workflows  order.Versions
	// inputs check each workflow's submissions, by name.
	inputs    map[string]order.InputCheck
	now       func() time.Time
	log       *slog.Logger
	metrics   *metrics.Recorder
	anonymous string
	pages     pagetoken.Source
	callbacks callbacktoken.Source
	// pauses, when set, are the workflows' pauses as this instance read
	// them: a paused workflow's new orders are held or refused.
	pauses *pausecache.Cache
}

// Config wires the submission service.
type Config struct {
	InstanceID string
	Store      Store
	Controls   Controls
	History    History
	Dispatcher Dispatcher
	// Workflows are the workflow versions this build runs; a new order
	// is submitted under the latest.
	Workflows order.Versions
	Now       func() time.Time
	Log       *slog.Logger
	Metrics   *metrics.Recorder
	// AnonymousCaller, when set, is the caller of a request that names
	// none. Only for LocalStack, whose API Gateway enforces no IAM and
	// passes no caller identity; in AWS the IAM authorizer names the
	// caller of every request, and this stays empty.
	AnonymousCaller string
	// PageTokens gives what seals the cursors of search pages with the
	// stage's key; a key it cannot give fails searches alone (503), not
	// submissions.
	PageTokens pagetoken.Source
	// CallbackTokens gives what opens the tokens of callbacks (POST
	// /callbacks) with the stage's callback key; nil, or a key it cannot
	// give, fails callbacks alone (503).
	CallbackTokens callbacktoken.Source
	// Pauses, when set, reads each workflow's pause (see order.Pause).
	Pauses pausecache.Reader
}

// NewService returns the submission service.
// Its error names a workflow whose input schema does not compile.
func NewService(c Config) (*Service, error) {
	if c.PageTokens == nil {
		return nil, errors.New("the submission service needs the stage's page token key to search")
	}
	inputs := map[string]order.InputCheck{}
	for _, name := range c.Workflows.Names() {
		wf, _ := c.Workflows.LatestOf(name)
		check, err := inputCheck(wf)
		if err != nil {
			return nil, err
		}
		inputs[name] = check
	}
	s := &Service{id: c.InstanceID, store: c.Store, controls: c.Controls, history: c.History, dispatcher: c.Dispatcher, workflows: c.Workflows,
		inputs: inputs, now: c.Now, log: c.Log, metrics: c.Metrics, anonymous: c.AnonymousCaller, pages: c.PageTokens,
		callbacks: c.CallbackTokens}
	if c.Pauses != nil {
		s.pauses = pausecache.New(c.Pauses, c.Now)
	}
	return s, nil
}

// inputCheck checks submissions against wf's input schema. A workflow
// made in Go without one (in tests) takes any JSON object.
func inputCheck(wf order.Workflow) (order.InputCheck, error) {
	if len(wf.Input) == 0 {
		return nil, nil
	}
	schema, err := definition.CompileSchema(wf.Input)
	if err != nil {
		return nil, fmt.Errorf("workflow %s version %s: input schema: %w", wf.Name, wf.Version, err)
	}
	return func(doc []byte) []order.FieldError {
		var out []order.FieldError
		for _, p := range schema.Check(doc) {
			out = append(out, order.FieldError{Field: cmp.Or(p.Field, "body"), Problem: p.Problem})
		}
		return out
	}, nil
}

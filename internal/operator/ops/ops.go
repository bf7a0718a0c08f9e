// Package ops is what an operator does to a stage with the orderly CLI:
// read an order and its history, cancel or redrive it, and look at and
// move back dead letters. It works on the stage's own tables and queues
// through the functions' own packages, so every change is one of the
// fenced transitions the API makes (control), never a raw table edit.
package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"orderly/internal/actor/api"
	"orderly/internal/actor/control"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/compose"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// Actors the history names for an operator's changes made with the CLI.
const (
	ByOperatorCancel  = "operator cancel"
	ByOperatorRedrive = control.ByOperatorRedrive
)

// SQS is the part of *sqs.Client the dead-letter commands use.
type SQS interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Stage is one deployment (or `make run`) as an operator sees it.
type Stage struct {
	Name     string
	catalog  resources.Catalog
	store    *dynamo.Store
	history  *dynamo.History
	controls *control.Service
	sqs      SQS
	agents   []string
	// workflows are the versions this build has.
	workflows order.Versions
	now       func() time.Time
}

// Open returns the view over the given clients of a stage that runs wfs
// (definition.Deployed, as its functions build them). The resource names
// follow from the stage's name, as the stack and the local runtime name
// them.
func Open(name string, db *dynamodb.Client, queues SQS, wfs order.Versions) *Stage {
	cat := resources.New(name, wfs.Agents())
	store := dynamo.NewStore(db, cat.Orders.Name)
	return &Stage{
		Name: name, catalog: cat, store: store,
		history:  dynamo.NewHistory(db, cat.History.Name),
		controls: compose.Controls(store, ByOperatorCancel, wfs, time.Now),
		sqs:      queues, agents: wfs.Agents(), workflows: wfs, now: time.Now,
	}
}

// WithClock returns the stage with another clock (tests).
func (s *Stage) WithClock(now func() time.Time) *Stage {
	c := *s
	c.now = now
	return &c
}

// Listed is one order in flight: its active record and how late it is.
type Listed struct {
	OrderID string `json:"orderId"`
	// Status is the order's, as its active record implies it.
	Status order.Status `json:"status"`
	// Workflow and Version are the workflow version the order runs under.
	Workflow   string    `json:"workflow"`
	Version    string    `json:"version"`
	Step       string    `json:"step"`
	Undo       bool      `json:"undo,omitempty"`
	State      string    `json:"state"`
	Attempt    int       `json:"attempt"`
	Failures   int       `json:"failureCount"`
	CompleteBy time.Time `json:"completeBy,omitzero"`
	// Late is how long ago CompleteBy passed; 0 while it has not.
	Late      time.Duration `json:"lateNanos"`
	LastError string        `json:"lastError,omitempty"`
}

// InFlight lists up to limit orders with a running record (a step or an
// undo waiting for a claim, a reply, or its alert to be sent), from the
// due index the Supervisor reads, without a Scan; with late > 0, only
// those whose deadline passed at least that long ago: the stuck ones.
func (s *Stage) InFlight(ctx context.Context, late time.Duration, limit int) ([]Listed, error) {
	upTo := s.now().Add(-late)
	if late <= 0 {
		upTo = s.now().AddDate(100, 0, 0) // every entry of the index
	}
	ls, err := s.collect(ctx, limit, s.dueUpTo(upTo), func(l Listed) bool { return late <= 0 || l.Late >= late })
	if err != nil {
		return nil, fmt.Errorf("list orders in flight: %w", err)
	}
	return ls, nil
}

// InStatus lists up to limit orders in a status: Error from the error
// index, a status in flight (Pending, Processing, Waiting, Compensating,
// Cancelling) from the due index. Orders that ended are in neither: they
// are looked up by id.
func (s *Stage) InStatus(ctx context.Context, status order.Status, limit int) ([]Listed, error) {
	switch status {
	case order.StatusError:
		return s.InError(ctx, limit)
	case order.StatusPending, order.StatusProcessing, order.StatusWaiting, order.StatusCompensating, order.StatusCancelling:
		ls, err := s.collect(ctx, limit, s.dueUpTo(s.now().AddDate(100, 0, 0)), func(l Listed) bool { return l.Status == status })
		if err != nil {
			return nil, fmt.Errorf("list orders %s: %w", status, err)
		}
		return ls, nil
	}
	return nil, fmt.Errorf("orders %q are not listed: %w", status, ErrNotListed)
}

// VersionUse is how many orders that have not ended use one workflow
// version.
type VersionUse struct {
	Workflow string `json:"workflow"`
	Version  string `json:"version"`
	InFlight int    `json:"inFlight"`
	InError  int    `json:"inError"`
	// Known says whether this build (the CLI's) has the version; Latest,
	// whether new orders get it.
	Known  bool `json:"known"`
	Latest bool `json:"latest"`
}

// Versions counts the orders in flight and in Error per workflow version,
// from the due and error indexes (never a Scan), with every version the
// build has even when no order uses it: a version is safe to remove from
// the code once no order uses it. Ended orders are never run again, so
// they do not count.
func (s *Stage) Versions(ctx context.Context) ([]VersionUse, error) {
	use := map[string]*VersionUse{}
	get := func(workflow, v string) *VersionUse {
		ref := order.Ref(workflow, v)
		if use[ref] == nil {
			_, known := s.workflows.Get(workflow, v)
			latest, _ := s.workflows.LatestOf(workflow)
			use[ref] = &VersionUse{Workflow: order.WorkflowOf(workflow), Version: order.VersionOf(v), Known: known, Latest: known && v == latest.Version}
		}
		return use[ref]
	}
	for _, w := range s.workflows.Workflows() {
		get(w.Name, w.Version)
	}
	flying, err := s.collect(ctx, math.MaxInt, s.dueUpTo(s.now().AddDate(100, 0, 0)), func(Listed) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("count orders in flight per version: %w", err)
	}
	for _, l := range flying {
		get(l.Workflow, l.Version).InFlight++
	}
	stuck, err := s.collect(ctx, math.MaxInt, s.store.InError, func(Listed) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("count orders in Error per version: %w", err)
	}
	for _, l := range stuck {
		get(l.Workflow, l.Version).InError++
	}
	out := make([]VersionUse, 0, len(use))
	for _, u := range use {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b VersionUse) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// ErrNotListed marks a status no index lists: an order that ended
// (Processed, Failed, Cancelled) is looked up by id.
var ErrNotListed = errors.New("only Error and the statuses in flight (Pending, Processing, Waiting, Compensating, Cancelling) are indexed; an order that ended is looked up by id")

// InError lists up to limit orders in Error with their stuck record, from
// the sparse error index (never a Scan), each shard's oldest first.
func (s *Stage) InError(ctx context.Context, limit int) ([]Listed, error) {
	ls, err := s.collect(ctx, limit, s.store.InError, func(Listed) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("list orders in Error: %w", err)
	}
	return ls, nil
}

// dueUpTo reads the due index up to a time, for collect.
func (s *Stage) dueUpTo(upTo time.Time) func(ctx context.Context, shard, n int, after dynamo.Cursor) ([]order.StepState, dynamo.Cursor, error) {
	return func(ctx context.Context, shard, n int, after dynamo.Cursor) ([]order.StepState, dynamo.Cursor, error) {
		return s.store.DueSteps(ctx, shard, upTo, n, after)
	}
}

// collect reads every shard of an index, page by page, and keeps up to
// limit of the records found.
func (s *Stage) collect(ctx context.Context, limit int,
	read func(ctx context.Context, shard, n int, after dynamo.Cursor) ([]order.StepState, dynamo.Cursor, error),
	keep func(Listed) bool) ([]Listed, error) {
	now := s.now()
	var out []Listed
	for shard := range s.store.Shards() {
		var cursor dynamo.Cursor
		for len(out) < limit {
			steps, next, err := read(ctx, shard, limit-len(out), cursor)
			if err != nil {
				return nil, err
			}
			for _, st := range steps {
				if l := listed(st, now); keep(l) {
					out = append(out, l)
				}
			}
			if cursor = next; len(cursor) == 0 {
				break
			}
		}
	}
	return out, nil
}

func listed(st order.StepState, now time.Time) Listed {
	l := Listed{OrderID: st.OrderID, Status: statusOf(st), Workflow: order.WorkflowOf(st.Workflow), Version: order.VersionOf(st.Version), Step: st.Step, Undo: st.Undo, State: string(st.ProcessState), Attempt: st.Attempt,
		Failures: st.FailureCount, LastError: st.LastError}
	// A record in Error waits for an operator, not for a deadline: the
	// one it stopped with is nobody's to watch.
	if st.ProcessState != order.Error {
		l.CompleteBy = st.CompleteBy
	}
	if !l.CompleteBy.IsZero() && now.After(l.CompleteBy) {
		l.Late = now.Sub(st.CompleteBy)
	}
	return l
}

// statusOf is the status of the order whose active record is st: a stuck
// record's is Error, a waiting step's Waiting, a cancelled order's
// Cancelling (its step still running, or its undos), an undo's
// Compensating, the first step's Pending, any other step's Processing.
func statusOf(st order.StepState) order.Status {
	switch {
	case st.ProcessState == order.Error:
		return order.StatusError
	case st.ProcessState == order.Waiting && !st.Undo:
		// A cancel stops a wait in its own write, so a waiting step's
		// order is never Cancelling.
		return order.StatusWaiting
	case st.CancelRequested:
		return order.StatusCancelling
	case st.Undo:
		return order.StatusCompensating
	case st.Index == 0:
		return order.StatusPending
	}
	return order.StatusProcessing
}

// Show reads an order and its records in one consistent read.
func (s *Stage) Show(ctx context.Context, id string) (api.OrderView, error) {
	o, steps, err := s.store.GetOrder(ctx, id)
	if err != nil {
		return api.OrderView{}, fmt.Errorf("stage %s: %w", s.Name, err) // the store's error names the order
	}
	wf, _ := s.workflows.Get(o.Workflow, o.Version) // a version this build lacks: what a step waits for is not shown
	v := api.NewOrderView(o, steps, wf)
	p, held, err := s.HeldBy(ctx, v, len(steps) > 0 && steps[0].Held)
	if err != nil {
		return api.OrderView{}, err
	}
	if held {
		v.HeldBy = &p
	}
	return v, nil
}

// History is the status of an order and every transition of it, in
// order.
func (s *Stage) History(ctx context.Context, id string) (order.Status, []order.HistoryEntry, error) {
	o, _, err := s.store.GetOrder(ctx, id)
	if err != nil {
		return "", nil, fmt.Errorf("history of order %s: %w", id, err)
	}
	ts, err := s.HistorySince(ctx, id, o.CreatedAt)
	return o.Status, ts, err
}

// HistorySince lists the transitions of the order with that id since it
// was submitted at since: for a caller that has read the order already.
func (s *Stage) HistorySince(ctx context.Context, id string, since time.Time) ([]order.HistoryEntry, error) {
	ts, err := s.history.List(ctx, id, since)
	if err != nil {
		return nil, fmt.Errorf("history of order %s: %w", id, err)
	}
	return ts, nil
}

// Alerts lists up to limit alerts sent to operators since the given time,
// newest first, from the history's alert index (no Scan); with kind set,
// up to limit alerts of that kind, however many of other kinds are newer.
// The stage keeps them as long as the history.
func (s *Stage) Alerts(ctx context.Context, since time.Time, kind order.AlertKind, limit int) ([]order.Alert, error) {
	out, err := alertsOfKind(ctx, s.history, since, s.now(), kind, limit)
	if err != nil {
		return nil, fmt.Errorf("alerts of stage %s: %w", s.Name, err)
	}
	return out, nil
}

// alertReader is the part of the history alertsOfKind reads: up to limit
// alerts since a time, newest first.
type alertReader interface {
	Alerts(ctx context.Context, since, now time.Time, limit int) ([]order.Alert, error)
}

// alertsOfKind reads up to limit alerts of kind (any kind when empty),
// newest first. The index has every kind mixed, so the kind is kept before
// the limit counts: a read that comes back full with too few of the kind
// is made again, twice as long, until enough are found or the index has
// no more.
func alertsOfKind(ctx context.Context, h alertReader, since, now time.Time, kind order.AlertKind, limit int) ([]order.Alert, error) {
	if limit <= 0 {
		return nil, nil
	}
	if kind == "" {
		return h.Alerts(ctx, since, now, limit)
	}
	for read := limit; ; read = min(read, math.MaxInt/2) * 2 {
		all, err := h.Alerts(ctx, since, now, read)
		if err != nil {
			return nil, err
		}
		var out []order.Alert
		for _, a := range all {
			if a.Kind == kind {
				out = append(out, a)
			}
		}
		if len(out) >= limit || len(all) < read {
			return out[:min(len(out), limit)], nil
		}
	}
}

// Search lists up to max orders q matches, newest first, from the
// search indexes (no Scan), page after page (q.Limit is set from max);
// more reports that it stopped at max with more pages to read.
func (s *Stage) Search(ctx context.Context, q order.Query, max int) (found []order.Summary, more bool, err error) {
	var position []byte
	for len(found) < max {
		q.Limit = min(max-len(found), order.MaxSearchLimit)
		page, err := s.store.Search(ctx, q, position)
		if err != nil {
			return nil, false, fmt.Errorf("search stage %s: %w", s.Name, err)
		}
		found = append(found, page.Orders...)
		if position = page.Next; position == nil {
			return found, false, nil
		}
	}
	return found, true, nil
}

// Cancel cancels an order on its client's behalf, as the client's own
// POST /orders/{id}/cancel would.
func (s *Stage) Cancel(ctx context.Context, id string) (order.Order, error) {
	o, _, err := s.store.GetOrder(ctx, id)
	if err != nil {
		return o, fmt.Errorf("stage %s: %w", s.Name, err) // the store's error names the order
	}
	return s.controls.Cancel(ctx, order.Principal{ID: o.Caller}, id)
}

// Redrive resumes an order in Error: action is order.RedriveRetry,
// order.RedriveCompensate or empty (what the stuck record calls for).
func (s *Stage) Redrive(ctx context.Context, id, action string) (order.Order, error) {
	return s.controls.Redrive(ctx, id, action)
}

// SendEvent delivers the event name with data, a JSON object, to the
// order as an operator (the history names control.ByOperatorEvent), as
// POST /ops/orders/{id}/events/{name} would: the step that waits for it
// takes data as its result and the order goes on. data is checked as the
// API checks a body (order.ParseEventData), then against the step's
// schema; bad data, an event the workflow has not, or an order not
// waiting for it gets control.SendEvent's error and nothing is written.
func (s *Stage) SendEvent(ctx context.Context, id, name string, data json.RawMessage) (order.Order, error) {
	data, err := order.ParseEventData(data)
	if err != nil {
		return order.Order{}, fmt.Errorf("event %s's data: %w", name, err)
	}
	// An operator may send to any order: the principal is not asked.
	// control's errors name the order and the event.
	return s.controls.SendEvent(ctx, order.Principal{}, true, id, name, data)
}

// Move moves an order parked under a workflow version this build lacks
// onto a version it has, when the order's steps fit it (control.Move).
func (s *Stage) Move(ctx context.Context, id, version string) (order.Order, error) {
	return s.controls.Move(ctx, id, version)
}

// DeadLetterQueue is one dead-letter queue of the stage and what waits in it.
type DeadLetterQueue struct {
	Name string `json:"name"`
	// Source is the queue its messages came from; empty for a queue of
	// failure records (a stream's or a schedule's), which are not moved back.
	Source   string `json:"source,omitempty"`
	Messages int    `json:"messages"`
	InFlight int    `json:"inFlight"`
}

// DeadLetters lists the stage's dead-letter queues that exist, with their
// depth.
func (s *Stage) DeadLetters(ctx context.Context) ([]DeadLetterQueue, error) {
	var out []DeadLetterQueue
	for _, q := range s.deadLetterQueues() {
		url, err := s.url(ctx, q.Name)
		if errors.Is(err, errNoQueue) {
			continue // a stack-only queue under `make run`
		}
		if err != nil {
			return nil, err
		}
		d, err := s.depth(ctx, q.Name, url)
		if err != nil {
			return nil, err
		}
		q.Messages, q.InFlight = d.Messages, d.InFlight
		out = append(out, q)
	}
	return out, nil
}

// depth reads a queue's approximate counts of waiting and in-flight
// messages.
func (s *Stage) depth(ctx context.Context, name, url string) (DeadLetterQueue, error) {
	attrs, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return DeadLetterQueue{}, fmt.Errorf("queue %s: %w", name, err)
	}
	var d DeadLetterQueue
	var errs []error
	for k, into := range map[sqstypes.QueueAttributeName]*int{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages:           &d.Messages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
	} {
		n, err := strconv.Atoi(attrs.Attributes[string(k)])
		if err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %s: %w", name, k, err))
		}
		*into = n
	}
	return d, errors.Join(errs...)
}

func (s *Stage) deadLetterQueues() []DeadLetterQueue {
	var qs []DeadLetterQueue
	for _, agent := range s.agents {
		q := s.catalog.RequestQueues[agent]
		qs = append(qs, DeadLetterQueue{Name: q.DeadLetterName, Source: q.Name})
	}
	qs = append(qs, DeadLetterQueue{Name: s.catalog.ResponseQueue.DeadLetterName, Source: s.catalog.ResponseQueue.Name})
	// The stack's failure destinations hold records about failures, not
	// the messages themselves.
	qs = append(qs, DeadLetterQueue{Name: "orderly-" + s.Name + "-stream-failures"},
		DeadLetterQueue{Name: "orderly-" + s.Name + "-schedule-failures"})
	return qs
}

// Letter is one message in a dead-letter queue, as `dlq show` prints it.
type Letter struct {
	ID string `json:"messageId"`
	// Sent is when it was first sent to its queue; Receives counts how
	// often it was received, there and here.
	Sent     time.Time `json:"sent"`
	Receives int       `json:"receives"`
	Body     string    `json:"body"`
}

// PeekDeadLetters reads up to max messages of a dead-letter queue without
// taking them: each is hidden while the others are read, then made
// visible again, so it stays there for a redrive. Reading counts as a
// receive.
func (s *Stage) PeekDeadLetters(ctx context.Context, name string, max int) ([]Letter, error) {
	if !slices.ContainsFunc(s.deadLetterQueues(), func(q DeadLetterQueue) bool { return q.Name == name }) {
		return nil, fmt.Errorf("%s is not a dead-letter queue of stage %s", name, s.Name)
	}
	url, err := s.url(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Letter
	var handles []*string
	defer func() {
		// Visible again at once; one left hidden is back in 30 seconds.
		for _, h := range handles {
			s.sqs.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: h})
		}
	}()
	seen := map[string]bool{}
	for len(out) < max {
		got, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: int32(min(10, max-len(out))), VisibilityTimeout: 30, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
				sqstypes.MessageSystemAttributeNameSentTimestamp, sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", name, err)
		}
		fresh := 0
		for _, m := range got.Messages {
			id := aws.ToString(m.MessageId)
			handles = append(handles, m.ReceiptHandle)
			if seen[id] {
				continue
			}
			seen[id], fresh = true, fresh+1
			l := Letter{ID: id, Body: aws.ToString(m.Body)}
			if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
				l.Sent = time.UnixMilli(ms).UTC()
			}
			l.Receives, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
			out = append(out, l)
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}

// Moved is what a dead-letter redrive did.
type Moved struct {
	Queue  string `json:"queue"`
	Source string `json:"source"`
	// Moved counts the messages sent back to Source and deleted from
	// Queue; with a dry run, the messages that would have been.
	Moved  int  `json:"moved"`
	DryRun bool `json:"dryRun"`
}

// RedriveDeadLetters moves up to max messages of a dead-letter queue back to
// its source queue: each is sent there, then deleted from the dead-letter
// queue, so a crash in between leaves a duplicate, never a loss (every
// consumer is idempotent). A dry run touches no message: it reports how
// many would move from the queue's (approximate) depth.
func (s *Stage) RedriveDeadLetters(ctx context.Context, name string, max int, dryRun bool) (Moved, error) {
	var q DeadLetterQueue
	for _, c := range s.deadLetterQueues() {
		if c.Name == name {
			q = c
		}
	}
	if q.Name == "" {
		return Moved{}, fmt.Errorf("%s is not a dead-letter queue of stage %s", name, s.Name)
	}
	if q.Source == "" {
		return Moved{}, fmt.Errorf("%s holds failure records, not messages to move back; read them with dlq show", name)
	}
	res := Moved{Queue: q.Name, Source: q.Source, DryRun: dryRun}
	from, err := s.url(ctx, q.Name)
	if err != nil {
		return res, err
	}
	if dryRun {
		depth, err := s.depth(ctx, q.Name, from)
		res.Moved = min(depth.Messages, max)
		return res, err
	}
	to, err := s.url(ctx, q.Source)
	if err != nil {
		return res, err
	}
	seen := map[string]bool{}
	for res.Moved < max {
		out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(from),
			MaxNumberOfMessages: int32(min(10, max-res.Moved)), WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}})
		if err != nil {
			return res, fmt.Errorf("receive from %s: %w", q.Name, err)
		}
		fresh := 0
		for _, m := range out.Messages {
			if seen[aws.ToString(m.MessageId)] {
				continue
			}
			seen[aws.ToString(m.MessageId)] = true
			fresh++
			if _, err := s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(to), MessageBody: m.Body,
				MessageAttributes: m.MessageAttributes}); err != nil {
				return res, fmt.Errorf("send to %s: %w", q.Source, err)
			}
			if _, err := s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(from), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return res, fmt.Errorf("delete from %s (the message was sent back, and will be again): %w", q.Name, err)
			}
			res.Moved++
		}
		if fresh == 0 {
			return res, nil
		}
	}
	return res, nil
}

var errNoQueue = errors.New("no such queue")

func (s *Stage) url(ctx context.Context, name string) (string, error) {
	out, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var missing *sqstypes.QueueDoesNotExist
	var apiErr smithy.APIError
	if errors.As(err, &missing) || errors.As(err, &apiErr) && apiErr.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" {
		return "", fmt.Errorf("queue %s: %w", name, errNoQueue)
	}
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

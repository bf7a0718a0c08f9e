package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/adapter/dynamo"
	orderlysns "orderly/internal/adapter/sns"
	"orderly/internal/local/faults"
	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
)

// Env is what a run needs of its surroundings.
type Env struct {
	Clients provision.Clients
	Stage   string
	Ledger  string // the simulator's ledger file
}

// acked is an order the API acknowledged.
type acked struct {
	Planned
	ID string
	At time.Time
	// CancelAnswer is the status the API answered the client's cancel
	// with (202 or 409), for orders of kind Cancel.
	CancelAnswer int
	// Redriven is set once the soak's operator redrove the order; redrives
	// counts how often (a simulator restarted mid-way refuses the first
	// undo again, so the operator may have to try again).
	Redriven bool
	redrives int
	// WaitedAtCancel is set for an order of kind FulfilCancel that was
	// seen Waiting before the client cancelled it.
	WaitedAtCancel bool
}

// maxRedrives is how often the soak's operator redrives one order.
const maxRedrives = 3

// Run does one soak and accounts for it.
func Run(ctx context.Context, cfg Config, env Env) (Report, error) {
	plan := Plan(cfg.Orders, cfg.Mix, cfg.Seed)
	if cfg.RuntimeLog != nil {
		cfg.RuntimeLog = &lockedWriter{w: cfg.RuntimeLog}
	}
	far, err := startRemote(cfg, env.Ledger)
	if err != nil {
		return Report{}, err
	}
	defer far.stop()
	c := &child{cfg: cfg, injected: map[faults.Kind]int{}, crashedAt: map[string]int{}}
	if err := c.begin(); err != nil {
		return Report{}, err
	}
	defer c.stop()
	ready, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := waitReady(ready, cfg.APIAddr); err != nil {
		return Report{}, err
	}
	cat := resources.New(env.Stage, soakWorkflows().Agents())
	inbox, err := subscribe(ctx, env, cat)
	if err != nil {
		return Report{}, err
	}
	// Alerts and status events are read while the soak runs (see
	// queueReader).
	events, err := newEventReader(ctx, env, cat)
	if err != nil {
		return Report{}, err
	}
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var reading sync.WaitGroup
	reading.Go(func() { events.run(readCtx) })
	reading.Go(func() { inbox.run(readCtx) })
	poison, err := sendPoison(ctx, env, cat)
	if err != nil {
		return Report{}, err
	}

	// kill -9 on a schedule while orders go in.
	killCtx, stopKilling := context.WithCancel(ctx)
	var killing sync.WaitGroup
	if cfg.KillEvery > 0 {
		killing.Go(func() {
			t := time.NewTicker(cfg.KillEvery)
			defer t.Stop()
			for {
				select {
				case <-killCtx.Done():
					return
				case <-t.C:
					// Orders waiting now wait across the kill: their
					// callbacks and events meet a runtime that is down.
					waiting := waitingNow(killCtx, cfg.APIAddr)
					c.mu.Lock()
					if waiting > 0 {
						c.killsWhileWaiting++
						c.waitingAtKills += waiting
					}
					c.mu.Unlock()
					cfg.Log.Info("kill -9 of the runtime", "waiting", waiting)
					if err := c.kill9(); err != nil {
						cfg.Log.Error("restart after kill failed", "error", err)
					}
				}
			}
		})
	}
	// Deploys of a new workflow version, a rollback and the version again,
	// while orders go in.
	if cfg.VersionChange > 0 {
		killing.Go(func() {
			for i, step := range []struct {
				after time.Duration
				build []string
				what  string
			}{
				{cfg.VersionChange, []string{"ORDERLY_REHEARSE_VERSION=1"}, "deploy a new workflow version"},
				{cfg.RollbackFor, nil, "roll the new version back"},
				{cfg.RollbackFor, []string{"ORDERLY_REHEARSE_VERSION=1"}, "deploy the new version again"},
			} {
				select {
				case <-killCtx.Done():
					return
				case <-time.After(step.after):
				}
				cfg.Log.Info(step.what, "step", i+1)
				if err := c.deploy(step.build); err != nil {
					cfg.Log.Error("deploy failed", "error", err)
				}
			}
		})
	}
	// An operator's maintenance window of one service, while orders go
	// in and the runtime is killed, through the CLI's own code.
	var (
		pausing sync.WaitGroup
		paused  pauseRun
	)
	if cfg.Pause.Service != "" {
		stage := ops.Open(env.Stage, env.Clients.DynamoDB, env.Clients.SQS, soakWorkflows())
		pausing.Go(func() { paused = cfg.Pause.operate(ctx, stage, far.sim, cfg.Log) })
	}
	began := time.Now()
	orders := submitAll(ctx, cfg, plan)
	submitted := time.Since(began)
	cfg.Log.Info("every order submitted", "acknowledged", len(orders), "took", submitted.Round(time.Second))

	// The kills go on until every order is terminal: crashes mid-flight.
	store := dynamo.NewStore(env.Clients.DynamoDB, cat.Orders.Name)
	final, waited := awaitTerminal(ctx, store, orders, cfg.Bound, func(id string) bool {
		return post(ctx, &http.Client{Timeout: 30 * time.Second}, "http://"+cfg.APIAddr+"/orders/"+id+"/redrive") == http.StatusAccepted
	})
	// The kills go on until the operator's resume too.
	pausing.Wait()
	stopKilling()
	killing.Wait()
	cfg.Log.Info("orders settled", "took", waited.Round(time.Second))
	// The runtime keeps running meanwhile: a Supervisor sends an alert
	// whose first publish failed once its lease is over.
	var redriven []string
	for _, a := range orders {
		if a.Redriven {
			redriven = append(redriven, a.ID)
		}
	}
	stopReading()
	reading.Wait()
	alerts := inbox.finish(ctx, final, redriven, 2*order.AlertLease+time.Minute)
	cfg.Log.Info("alerts read", "alerts", len(alerts))
	// Patience covers a runtime restarted after a late crash and a message
	// hidden by a receive whose answer was lost (receiveVisibility).
	readingOn := time.Now()
	published := events.finish(ctx, final, 3*time.Minute)
	cfg.Log.Info("status events read", "orders", len(published), "took", time.Since(readingOn).Round(time.Millisecond))
	effects, err := simulator.ReadLedger(env.Ledger)
	if err != nil {
		return Report{}, fmt.Errorf("read the simulator's ledger: %w", err)
	}
	// A poison message reaches its dead-letter queue after five receives,
	// each a visibility timeout apart.
	var (
		dlq     int
		byQueue map[string]int
	)
	for giveUp := time.Now().Add(3 * time.Minute); ; {
		if byQueue, err = deadLetters(ctx, env, cat); err != nil {
			return Report{}, err
		}
		dlq = 0
		for _, n := range byQueue {
			dlq += n
		}
		if dlq >= poison || time.Now().After(giveUp) || ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	c.mu.Lock()
	r := account(orders, final, effects, alerts)
	r.Waits = waitFacts(orders, final, far.sim)
	r.Waits.Tally, r.Waits.EventSendsFailed = far.sim.CallbackTally(), far.parties.SendsFailed()
	r.Waits.KillsWhileWaiting, r.Waits.WaitingAtKills = c.killsWhileWaiting, c.waitingAtKills
	r.Events = eventFacts(orders, final, published)
	r.Run = RunFacts{Orders: cfg.Orders, Acknowledged: len(orders), Clients: cfg.Clients, Seed: cfg.Seed,
		SubmitSeconds: submitted.Seconds(), SettleSeconds: waited.Seconds(), BoundSeconds: cfg.Bound.Seconds(),
		Starts: c.starts, Kills: c.kills, Crashes: c.crashes, Deploys: c.deploys}
	r.Faults = map[string]int{}
	for k, n := range c.injected {
		r.Faults[string(k)] = n
	}
	r.CrashedAt = maps.Clone(c.crashedAt)
	holds, kills, unread := slices.Clone(c.holds), slices.Clone(c.killedAt), slices.Clone(c.unread)
	c.mu.Unlock()
	history := dynamo.NewHistory(env.Clients.DynamoDB, cat.History.Name)
	if cfg.Pause.Service != "" {
		ev := pauseEvidence{run: paused, calls: far.calls.of(cfg.Pause.Service), holds: holds, kills: kills, unread: unread,
			agentOf: agentsOf(order.WithRehearsal(soakWorkflows()))}
		ev.histories = heldHistories(ctx, history, cfg.Pause.Service, holds)
		f := pauseFacts(ev, orders, final, alerts)
		r.Pause = &f
	}
	r.Poison = PoisonFacts{Sent: poison, InDeadLetterQueues: dlq, ByQueue: byQueue}
	var heldWrong []string
	if r.Pause != nil {
		heldWrong = r.Pause.heldWrongIDs
	}
	r.Histories = histories(ctx, history, slices.Concat(r.wrongIDs, r.lostIDs, r.dupIDs, heldWrong))
	return r, nil
}

// heldHistories reads the history of every order whose request an
// agent held for service's pause; one it cannot read is left out.
func heldHistories(ctx context.Context, h *dynamo.History, service string, holds []heldRequest) map[string][]order.HistoryEntry {
	out := map[string][]order.HistoryEntry{}
	for _, hr := range holds {
		if hr.Agent != service || out[hr.OrderID] != nil {
			continue
		}
		if es, err := h.List(ctx, hr.OrderID, time.Time{}); err == nil {
			out[hr.OrderID] = es
		}
	}
	return out
}

// agentsOf returns what names the service a step of an order's workflow
// version calls, among versions (empty for a step that calls none, or a
// version no runtime had).
func agentsOf(versions order.Versions) func(o order.Order, step string) string {
	return func(o order.Order, step string) string {
		wf, ok := versions.Get(o.Workflow, o.Version)
		if !ok {
			return ""
		}
		d, _ := wf.Step(step)
		return d.Agent
	}
}

// histories reads the history of each order in ids, one line per
// transition; a history it cannot read says why instead.
func histories(ctx context.Context, h *dynamo.History, ids []string) map[string][]string {
	if len(ids) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, id := range ids {
		ts, err := h.List(ctx, id, time.Time{})
		if err != nil {
			out[id] = []string{"history not read: " + err.Error()}
			continue
		}
		for _, t := range ts {
			what := t.Event
			if t.Record >= 0 {
				what = fmt.Sprintf("record %d %s (undo %t) attempt %d: %s", t.Record, t.Step, t.Undo, t.Attempt, t.Event)
			}
			if t.From != "" || t.To != "" {
				what += " " + t.From + ">" + t.To
			}
			if t.Reason != "" {
				what += ": " + t.Reason
			}
			out[id] = append(out[id], t.At.Format("15:04:05.000")+" "+t.By+": "+what)
		}
	}
	return out
}

// submitAll submits every planned order, retrying each with its key until
// the API acknowledges it: a runtime that is down or a fault is no reason
// to give an order up.
func submitAll(ctx context.Context, cfg Config, plan []Planned) []acked {
	var (
		mu      sync.Mutex
		out     []acked
		wg      sync.WaitGroup
		cancels sync.WaitGroup
	)
	burst := int(float64(len(plan)) * cfg.BurstShare)
	if cfg.BurstMax > 0 {
		burst = min(burst, cfg.BurstMax)
	}
	next := make(chan Planned)
	for range cfg.Clients {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			for p := range next {
				if a, ok := submit(ctx, client, cfg.APIAddr, p); ok {
					if a.Kind == FulfilCancel {
						// The client cancels once the order waits, without
						// holding up the next submissions.
						cancels.Go(func() {
							a.WaitedAtCancel = awaitWaiting(ctx, client, cfg.APIAddr, a.ID, 2*time.Minute)
							a.CancelAnswer = post(ctx, client, "http://"+cfg.APIAddr+"/orders/"+a.ID+"/cancel")
							mu.Lock()
							out = append(out, a)
							mu.Unlock()
						})
						continue
					}
					if a.Kind == Cancel {
						// The client changes its mind a second later.
						time.Sleep(time.Second)
						a.CancelAnswer = post(ctx, client, "http://"+cfg.APIAddr+"/orders/"+a.ID+"/cancel")
					}
					mu.Lock()
					out = append(out, a)
					mu.Unlock()
				}
			}
		})
	}
	var tick <-chan time.Time
	// An interrupt stops the submissions at once; the orders already
	// acknowledged are still accounted for.
plan:
	for i, p := range plan {
		if i == burst && cfg.Rate > 0 {
			t := time.NewTicker(time.Duration(float64(time.Second) / cfg.Rate))
			defer t.Stop()
			tick = t.C
		}
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
				break plan
			}
		}
		select {
		case next <- p:
		case <-ctx.Done():
			break plan
		}
	}
	close(next)
	wg.Wait()
	cancels.Wait()
	return out
}

// awaitWaiting polls the client's view of the order until it is Waiting,
// and reports whether it was before patience ran out (or the order ended
// without waiting, or ctx ended).
func awaitWaiting(ctx context.Context, client *http.Client, addr, id string, patience time.Duration) bool {
	for giveUp := time.Now().Add(patience); time.Now().Before(giveUp) && ctx.Err() == nil; {
		var v struct {
			Status order.Status `json:"status"`
		}
		if getJSON(ctx, client, "http://"+addr+"/orders/"+id, &v) == nil {
			switch {
			case v.Status == order.StatusWaiting:
				return true
			case v.Status.Terminal():
				return false
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}

// waitingNow counts the orders waiting now, on the operators' search (its
// first page, so at most 100); 0 when the API does not answer.
func waitingNow(ctx context.Context, addr string) int {
	var page struct {
		Orders []json.RawMessage `json:"orders"`
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if getJSON(ctx, client, "http://"+addr+"/ops/orders?status="+string(order.StatusWaiting)+"&limit=100", &page) != nil {
		return 0
	}
	return len(page.Orders)
}

// getJSON reads url's JSON answer into v; any status but 200 is an error.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func submit(ctx context.Context, client *http.Client, addr string, p Planned) (acked, bool) {
	body := p.Body()
	for try := 0; ctx.Err() == nil; try++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+p.Path(), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", p.Key)
		resp, err := client.Do(req)
		if err == nil {
			var got struct {
				OrderID string `json:"orderId"`
			}
			decErr := json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted && decErr == nil && got.OrderID != "" {
				return acked{Planned: p, ID: got.OrderID, At: time.Now()}, true
			}
		}
		time.Sleep(min(time.Duration(try+1)*200*time.Millisecond, 3*time.Second))
	}
	return acked{}, false
}

// post makes a POST without a body, retrying while the runtime is down or
// answers 5xx, and returns the final status (0 if ctx ended first).
func post(ctx context.Context, client *http.Client, url string) int {
	for try := 0; ctx.Err() == nil; try++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return resp.StatusCode
			}
		}
		time.Sleep(min(time.Duration(try+1)*200*time.Millisecond, 3*time.Second))
	}
	return 0
}

// awaitTerminal polls every order until all are terminal or the bound has
// passed, and returns their last states. An order whose plan says it gets
// stuck in Error (UndoStuck) is redriven once, as an operator would after
// the alert (see redriveNow), and is terminal only after that.
func awaitTerminal(ctx context.Context, store *dynamo.Store, orders []acked, bound time.Duration, redrive func(id string) bool) (map[string]order.Order, time.Duration) {
	began := time.Now()
	final := map[string]order.Order{}
	settled := func(a acked, o order.Order) bool {
		return o.Status.Terminal() && (a.Kind != UndoStuck || o.Status != order.StatusError || a.redrives >= maxRedrives)
	}
	for {
		pending := 0
		for i, a := range orders {
			if o, ok := final[a.ID]; ok && settled(a, o) {
				continue
			}
			o, steps, err := store.GetOrder(ctx, a.ID)
			if err == nil {
				final[a.ID] = o
			}
			if err == nil && redriveNow(a, o, steps) {
				orders[i].redrives++
				if redrive(a.ID) {
					orders[i].Redriven = true
				}
				pending++
				continue
			}
			if err != nil || !settled(orders[i], o) {
				pending++
			}
		}
		if pending == 0 || time.Since(began) > bound || ctx.Err() != nil {
			return final, time.Since(began)
		}
		time.Sleep(2 * time.Second)
	}
}

// redriveNow reports whether the soak's operator redrives the order now:
// one planned to get stuck in Error (UndoStuck), in Error, not redriven
// too often yet, and whose alert was sent. Like an operator woken by the
// alert, it does not act on an order whose alert is still pending (its
// sender crashed, or SNS refused it, and a Supervisor sends it later): a
// redrive then would withdraw the alert, and the soak could not tell an
// alert that was never sent from one nobody needed.
func redriveNow(a acked, o order.Order, steps []order.StepState) bool {
	if a.Kind != UndoStuck || o.Status != order.StatusError || a.redrives >= maxRedrives {
		return false
	}
	for _, st := range steps {
		if st.AlertPending {
			return false
		}
	}
	return true
}

// queueReader reads one queue while the soak runs and hands each
// message's body to keep. It reads all along, not once the orders have
// settled: moto's cost per message grows with the queue's depth, and a
// queue left to grow to thousands of messages slows every publish to it
// (a 100,000-order run's alert queue, read only at the end, took 87% of
// moto's CPU).
type queueReader struct {
	sqs  *sqs.Client
	url  *string
	keep func(body []byte)
}

// run reads until ctx ends.
func (r *queueReader) run(ctx context.Context) {
	for ctx.Err() == nil {
		r.once(ctx)
	}
}

// receiveVisibility hides a message the soak received from its later
// receives for this long, far less than the queues' own visibility
// timeouts (3 minutes for the status queue): a receive whose answer was
// lost (the SDK then receives again) had its messages hidden, and they
// must come back while the soak still reads.
const receiveVisibility = 20 * time.Second

// once reads one batch, deletes it and reports how many messages it held.
// A receive is not cut short when ctx ends: moto goes on polling for a
// receive whose client has gone, and a message it hands to that receive
// is hidden from the soak's later ones.
func (r *queueReader) once(ctx context.Context) int {
	receiving, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, err := r.sqs.ReceiveMessage(receiving, &sqs.ReceiveMessageInput{QueueUrl: r.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		VisibilityTimeout: int32(receiveVisibility.Seconds())})
	if err != nil || len(got.Messages) == 0 {
		return 0
	}
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, 0, len(got.Messages))
	for i, m := range got.Messages {
		r.keep([]byte(aws.ToString(m.Body)))
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	_, _ = r.sqs.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: r.url, Entries: entries})
	return len(got.Messages)
}

// readUntilQuiet reads until quiet empty reads in a row, or until giveUp.
func (r *queueReader) readUntilQuiet(ctx context.Context, quiet int, giveUp time.Time) {
	for empty := 0; empty < quiet && time.Now().Before(giveUp) && ctx.Err() == nil; {
		if r.once(ctx) == 0 {
			empty++
		} else {
			empty = 0
		}
	}
}

// alertInbox is a queue subscribed to the alert topic, and the alerts
// read from it.
type alertInbox struct {
	queueReader

	mu     sync.Mutex
	alerts []order.Alert
}

func subscribe(ctx context.Context, env Env, cat resources.Catalog) (*alertInbox, error) {
	topic, err := env.Clients.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(cat.AlertTopic)})
	if err != nil {
		return nil, fmt.Errorf("alert topic: %w", err)
	}
	url, err := orderlysns.SubscribeQueue(ctx, env.Clients.SNS, env.Clients.Deliveries, aws.ToString(topic.TopicArn), "orderly-"+env.Stage+"-soak-alerts")
	if err != nil {
		return nil, fmt.Errorf("alert inbox: %w", err)
	}
	in := &alertInbox{}
	in.queueReader = queueReader{sqs: env.Clients.Deliveries, url: aws.String(url), keep: func(body []byte) {
		var a order.Alert
		if json.Unmarshal(body, &a) == nil {
			in.mu.Lock()
			in.alerts = append(in.alerts, a)
			in.mu.Unlock()
		}
	}}
	return in, nil
}

// finish reads on, once the background reading has stopped, until each
// order in Error, or redriven from it, has an alert (an alert whose
// publish failed is sent again after its lease, so this can take a while)
// or patience runs out, then until the inbox stays quiet, so duplicates
// are counted too. It returns every alert read.
func (in *alertInbox) finish(ctx context.Context, final map[string]order.Order, redriven []string, patience time.Duration) []order.Alert {
	unalerted := func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		seen := map[string]bool{}
		for _, a := range in.alerts {
			seen[a.OrderID] = true
		}
		for id, o := range final {
			if o.Status == order.StatusError && !seen[id] {
				return true
			}
		}
		for _, id := range redriven {
			if !seen[id] {
				return true
			}
		}
		return false
	}
	for giveUp := time.Now().Add(patience); unalerted() && time.Now().Before(giveUp) && ctx.Err() == nil; {
		in.once(ctx)
	}
	in.readUntilQuiet(ctx, 5, time.Now().Add(patience))
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.alerts)
}

// eventReader reads the queue a rule on the stage's event bus feeds and
// keeps, per order, the statuses it saw events for.
type eventReader struct {
	queueReader

	mu   sync.Mutex
	seen map[string]map[order.Status]bool
}

func newEventReader(ctx context.Context, env Env, cat resources.Catalog) (*eventReader, error) {
	url, err := env.Clients.Deliveries.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(cat.StatusQueue.Name)})
	if err != nil {
		return nil, fmt.Errorf("status events queue: %w", err)
	}
	r := &eventReader{seen: map[string]map[order.Status]bool{}}
	r.queueReader = queueReader{sqs: env.Clients.Deliveries, url: url.QueueUrl, keep: func(body []byte) {
		var ev struct {
			Detail order.StatusChange `json:"detail"`
		}
		if json.Unmarshal(body, &ev) != nil {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.seen[ev.Detail.OrderID] == nil {
			r.seen[ev.Detail.OrderID] = map[order.Status]bool{}
		}
		r.seen[ev.Detail.OrderID][ev.Detail.Status] = true
	}}
	return r, nil
}

// finish reads on, once the background reading has stopped, until every
// terminal order in final has an event for its final status, or patience
// runs out, and returns what it saw. A queue quiet for a few seconds is
// no sign that nothing more comes: the recorder publishes after the write
// the soak saw, and after a crash or a kill -9 late in the run only once
// the runtime is back.
func (r *eventReader) finish(ctx context.Context, final map[string]order.Order, patience time.Duration) map[string]map[order.Status]bool {
	missing := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for id, o := range final {
			if o.Status.Terminal() && !r.seen[id][o.Status] {
				return true
			}
		}
		return false
	}
	for giveUp := time.Now().Add(patience); missing() && time.Now().Before(giveUp) && ctx.Err() == nil; {
		r.once(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// sendPoison puts malformed messages on the response queue and on every
// request queue: each must end in its dead-letter queue.
func sendPoison(ctx context.Context, env Env, cat resources.Catalog) (int, error) {
	names := []string{cat.ResponseQueue.Name}
	for _, q := range cat.RequestQueues {
		names = append(names, q.Name)
	}
	slices.Sort(names)
	for i, name := range names {
		url, err := env.Clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return 0, fmt.Errorf("queue %s: %w", name, err)
		}
		_, err = env.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url.QueueUrl,
			MessageBody: aws.String(`{"poison":` + strconv.Itoa(i) + `, "orderId": 7}`)})
		if err != nil {
			return 0, fmt.Errorf("send poison to %s: %w", name, err)
		}
	}
	return len(names), nil
}

// deadLetters counts the messages in each dead-letter queue, by name.
func deadLetters(ctx context.Context, env Env, cat resources.Catalog) (map[string]int, error) {
	names := []string{cat.ResponseQueue.DeadLetterName}
	for _, q := range cat.RequestQueues {
		names = append(names, q.DeadLetterName)
	}
	counts := map[string]int{}
	for _, name := range names {
		url, err := env.Clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		attrs, err := env.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		for _, v := range attrs.Attributes {
			n, _ := strconv.Atoi(v)
			counts[name] += n
		}
	}
	return counts, nil
}

// soakWorkflows are the workflows the soak's runtime runs: the shipped
// one and the checkout example.
func soakWorkflows() order.Versions {
	return ordertest.Built(order.DefaultTiming, Workflows...)
}

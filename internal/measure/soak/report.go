package soak

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/order"
)

// Report is a soak's accounting.
type Report struct {
	Run    RunFacts       `json:"run"`
	Faults map[string]int `json:"faultsInjected"`
	// CrashedAt counts the injected crashes by where they fell (see
	// faults.Point): between claim and send, between remote success and
	// reply, between an Error write and its alert, ...
	CrashedAt map[string]int `json:"crashedAt"`
	Outcomes  map[string]int `json:"outcomes"` // by final status
	// ByVersion counts the orders by the workflow version they ran under.
	ByVersion map[string]int `json:"ordersByVersion"`
	ByKind    map[Kind]int   `json:"ordersByKind"`
	// Lost: acknowledged orders not terminal within the bound, or missing.
	Lost int `json:"lost"`
	// DuplicateEffects: remote work done more than once for one key.
	DuplicateEffects int `json:"duplicateEffects"`
	// EffectsLeftInPlace counts remote effects of Failed or Cancelled
	// orders that were never undone (the ledger has the work, not its
	// undo).
	EffectsLeftInPlace int `json:"effectsLeftInPlace"`
	// WrongOutcomes: an outcome the evidence contradicts: an order whose
	// test values refuse a step Processed, a Processed order without all
	// its effects or with an undo, a Failed or Cancelled order with an
	// effect left in place, a cancel accepted but the order Processed, a
	// failure nothing explains, an Error never alerted.
	WrongOutcomes int      `json:"wrongOutcomes"`
	Wrong         []string `json:"wrong,omitempty"`
	// Histories holds, as the recorder kept them (status changes, record
	// states, alerts), the history of each wrong order, of up to five
	// lost ones and of up to three alerted twice, so a report says what
	// happened to them.
	Histories map[string][]string `json:"histories,omitempty"`
	wrongIDs  []string
	lostIDs   []string
	dupIDs    []string
	// GivenUp counts orders with no refusing test value that ended Failed
	// after their attempts timed out: every attempt was lost to crashes (a
	// claim whose request was never sent, a request taken by a runtime
	// that was then killed) or held past its deferrals. That is the
	// documented policy (undo and Failed after FAILURE_THRESHOLD timeouts),
	// not a wrong outcome, but the soak reports it.
	GivenUp []string `json:"givenUp,omitempty"`
	// ErrorsLeft counts orders still in Error at the end (an operator must
	// act). ErrorsAlerted counts orders that were in Error (at the end, or
	// before the soak's operator redrove them) with at least one alert;
	// DuplicateAlerts counts alerts beyond the first per order, record and
	// attempt that the engine sent again (a later publication: an alert
	// whose clearing write was lost to a crash is re-sent after its
	// lease), by kind in DuplicatesByKind; AlertCopies counts the same
	// publication received more than once (SNS and SQS deliver at least
	// once; the SDK resends a Publish whose answer was lost).
	ErrorsLeft       int            `json:"errorsLeft"`
	ErrorsAlerted    int            `json:"errorsAlerted"`
	ErrorsUnalerted  int            `json:"errorsUnalerted"`
	Alerts           map[string]int `json:"alerts"` // by kind
	DuplicateAlerts  int            `json:"duplicateAlerts"`
	DuplicatesByKind map[string]int `json:"duplicatesByKind,omitempty"`
	AlertCopies      int            `json:"alertCopies"`
	// Terminal time, submission to the last write, in seconds.
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
	// Slowest names the five orders that took longest to end, with their
	// kind and version: what a long settle waited for.
	Slowest []string    `json:"slowest,omitempty"`
	Poison  PoisonFacts `json:"poison"`
	Events  EventFacts  `json:"statusEvents"`
	Waits   WaitFacts   `json:"waits"`
	// Pause is what an operator's pause of a service did, in a run that
	// paused one.
	Pause *PauseFacts `json:"pause,omitempty"`
}

// WaitFacts says what the orders that wait (the fulfilment example's)
// met: kills -9 while they waited, callbacks and events sent to a runtime
// that was down, stale and duplicate callbacks.
type WaitFacts struct {
	// KillsWhileWaiting counts the kills -9 that found orders waiting;
	// WaitingAtKills sums those orders (at most 100 a kill).
	KillsWhileWaiting int `json:"killsWhileWaiting"`
	WaitingAtKills    int `json:"waitingAtKills"`
	// Tally is what the simulator's callbacks met: a retried one got no
	// answer (the runtime was down: connection refused) or a 5xx first.
	Tally simulator.CallbackTally `json:"callbacks"`
	// Answers counts the callbacks sent for the fulfilment orders by
	// outcome and the runtime's answer ("succeeded 200", "succeeded 410";
	// 0 when none came).
	Answers map[string]int `json:"callbackAnswers"`
	// StaleRefused counts the fulfil-late orders whose late callback was
	// answered 410; DuplicatesTaken the fulfil-twice orders whose second
	// success was answered 200 as the first.
	StaleRefused    int `json:"staleRefused"`
	DuplicatesTaken int `json:"duplicatesTaken"`
	// Refused counts callbacks the runtime refused as unauthenticated or
	// malformed (400, 401, 403, 404, 413, 415, 422): every callback the
	// simulator sends carries its call's token and a well-formed body, so
	// each is a broken promise.
	Refused int `json:"refused"`
	// EventSendsFailed counts the parties' events that got no answer (the
	// runtime was down) or a 5xx and were sent again.
	EventSendsFailed int `json:"eventSendsFailed"`
	// CancelledWhileWaiting counts the fulfil-cancel orders the client
	// saw Waiting before it cancelled them, and that ended Cancelled.
	CancelledWhileWaiting int `json:"cancelledWhileWaiting"`
}

// callbackLog is the simulator's record of the callbacks it sent.
type callbackLog interface {
	Callbacks(service, key string) []simulator.CallbackSent
}

// fulfilmentCallbacks are the fulfilment example's steps whose services
// call back, by service.
var fulfilmentCallbacks = []struct{ service, step string }{{"payment", "charge-payment"}, {"warehouse", "pick-and-ship"}}

// waitFacts reads, for every fulfilment order, the callbacks its services
// sent and the runtime's answers.
func waitFacts(orders []acked, final map[string]order.Order, sent callbackLog) WaitFacts {
	f := WaitFacts{Answers: map[string]int{}}
	for _, a := range orders {
		o, ok := final[a.ID]
		if !ok || !a.Kind.Fulfilment() {
			continue
		}
		if a.Kind == FulfilCancel && a.WaitedAtCancel && o.Status == order.StatusCancelled {
			f.CancelledWhileWaiting++
		}
		for _, c := range fulfilmentCallbacks {
			cbs := sent.Callbacks(c.service, o.RemoteKey(c.step))
			stale, successes := false, map[int][]int{}
			for _, cb := range cbs {
				f.Answers[fmt.Sprintf("%s %d", cb.Outcome, cb.Status)]++
				switch cb.Status {
				case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
					http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
					f.Refused++
				case http.StatusGone:
					stale = true
				}
				if cb.Outcome == order.CallbackOutcomeSucceeded {
					successes[cb.Accepted] = append(successes[cb.Accepted], cb.Status)
				}
			}
			if a.Service != c.service {
				continue
			}
			if a.Kind == FulfilLate && stale {
				f.StaleRefused++
			}
			if a.Kind == FulfilTwice && slices.ContainsFunc(slices.Collect(maps.Values(successes)), func(st []int) bool {
				return slices.Equal(st, []int{http.StatusOK, http.StatusOK})
			}) {
				f.DuplicatesTaken++
			}
		}
	}
	return f
}

// EventFacts says whether every order's final status was published.
type EventFacts struct {
	// Terminal counts terminal orders; Published those with an event
	// for their final status; Missing lists (some of) the others.
	Terminal  int      `json:"terminal"`
	Published int      `json:"published"`
	Missing   []string `json:"missing,omitempty"`
}

// eventFacts checks the status events against the final states.
func eventFacts(orders []acked, final map[string]order.Order, published map[string]map[order.Status]bool) EventFacts {
	var f EventFacts
	for _, a := range orders {
		o, ok := final[a.ID]
		if !ok || !o.Status.Terminal() {
			continue
		}
		f.Terminal++
		if published[a.ID][o.Status] {
			f.Published++
		} else if len(f.Missing) < 20 {
			f.Missing = append(f.Missing, fmt.Sprintf("%s: %s", a.ID, o.Status))
		}
	}
	return f
}

// RunFacts describes the run.
type RunFacts struct {
	Orders        int     `json:"orders"`
	Acknowledged  int     `json:"acknowledged"`
	Clients       int     `json:"clients"`
	Seed          uint64  `json:"seed"`
	SubmitSeconds float64 `json:"submitSeconds"`
	SettleSeconds float64 `json:"settleSeconds"`
	BoundSeconds  float64 `json:"boundSeconds"`
	Starts        int     `json:"runtimeStarts"`
	Kills         int     `json:"kill9"`
	Crashes       int     `json:"crashes"`
	// Deploys counts the version changes and rollbacks made mid-run.
	Deploys int `json:"deploys"`
}

// PoisonFacts says where the malformed messages went.
type PoisonFacts struct {
	Sent               int `json:"sent"`
	InDeadLetterQueues int `json:"inDeadLetterQueues"`
	// ByQueue counts the messages in each dead-letter queue: beyond the
	// poison, messages received too often (each kill -9 of the runtime
	// counts a receive of every message it held).
	ByQueue map[string]int `json:"byQueue"`
}

// OK reports whether the run kept every promise.
func (r Report) OK() bool {
	return r.Lost == 0 && r.DuplicateEffects == 0 && r.EffectsLeftInPlace == 0 && r.WrongOutcomes == 0 && r.ErrorsUnalerted == 0 &&
		r.Run.Acknowledged == r.Run.Orders && r.Poison.InDeadLetterQueues >= r.Poison.Sent && r.Events.Published == r.Events.Terminal &&
		r.Waits.Refused == 0 && (r.Pause == nil || r.Pause.OK())
}

// account judges every acknowledged order by the evidence: its final
// state, the ledger of remote work and undos, the alerts, and the answers
// to the client's cancel.
func account(orders []acked, final map[string]order.Order, effects []simulator.Effect, alerts []order.Alert) Report {
	r := Report{Outcomes: map[string]int{}, ByVersion: map[string]int{}, ByKind: map[Kind]int{}, Alerts: map[string]int{}}
	done, undone := map[string]int{}, map[string]int{}
	for _, e := range effects {
		if e.Undo {
			undone[e.Service+" "+e.Key]++
		} else {
			done[e.Service+" "+e.Key]++
		}
	}
	for _, n := range done {
		r.DuplicateEffects += n - 1
	}
	for _, n := range undone {
		r.DuplicateEffects += n - 1
	}
	alerted := map[string]int{}
	perStep := map[string]int{}
	published := map[string]bool{}
	for _, a := range alerts {
		// A publication is its content and the instant it was sent: a
		// second copy of it is delivery, not the engine.
		pub := fmt.Sprintf("%+v", a)
		if published[pub] {
			r.AlertCopies++
			continue
		}
		published[pub] = true
		alerted[a.OrderID]++
		r.Alerts[string(a.Kind)]++
		// Per attempt: after an operator's redrive, a new refusal is a
		// new alert, not a duplicate.
		key := fmt.Sprintf("%s %s %t %s %d", a.OrderID, a.Step, a.Undo, a.Kind, a.Attempt)
		if perStep[key]++; perStep[key] > 1 {
			r.DuplicateAlerts++
			if len(r.dupIDs) < 3 && !slices.Contains(r.dupIDs, a.OrderID) {
				r.dupIDs = append(r.dupIDs, a.OrderID)
			}
			if r.DuplicatesByKind == nil {
				r.DuplicatesByKind = map[string]int{}
			}
			r.DuplicatesByKind[string(a.Kind)]++
		}
	}
	// Every version the runtime may run: the shipped ones and the
	// rehearsal, whose renamed step has its own idempotency key.
	versions := order.WithRehearsal(soakWorkflows())
	var took []float64
	type slowOrder struct {
		seconds float64
		what    string
	}
	var slow []slowOrder
	for _, a := range orders {
		r.ByKind[a.Kind]++
		o, ok := final[a.ID]
		if !ok || !o.Status.Terminal() {
			r.Lost++
			if len(r.lostIDs) < 5 {
				r.lostIDs = append(r.lostIDs, a.ID)
			}
			r.Outcomes["not terminal"]++
			continue
		}
		r.Outcomes[string(o.Status)]++
		r.ByVersion[order.Ref(o.Workflow, o.Version)]++
		took = append(took, o.UpdatedAt.Sub(o.CreatedAt).Seconds())
		slow = append(slow, slowOrder{took[len(took)-1], fmt.Sprintf("%s (%s, %s, %s)", a.ID, a.Kind, order.Ref(o.Workflow, o.Version), o.Status)})
		wf, known := versions.Get(o.Workflow, o.Version)
		if !known {
			r.WrongOutcomes++
			r.wrongIDs = append(r.wrongIDs, a.ID)
			r.Wrong = append(r.Wrong, fmt.Sprintf("%s (%s %s): %s under workflow version %q, which no runtime had", a.ID, a.Kind, a.Service, o.Status, o.Version))
			continue
		}
		// inPlace counts effects done and not undone; undoable, those of
		// them a compensation must undo (a fraud check has nothing to undo).
		// A step that waits for an event calls no service: it has none.
		inPlace, undoable, everUndone, calls := 0, 0, 0, 0
		for _, d := range wf.Steps {
			if d.Agent == "" {
				continue
			}
			calls++
			k := d.Agent + " " + o.RemoteKey(d.Name)
			if done[k] > 0 && undone[k] == 0 {
				inPlace++
				if d.Undo != "" {
					undoable++
				}
			}
			everUndone += undone[k]
		}
		wrong := func(why string) {
			r.WrongOutcomes++
			r.wrongIDs = append(r.wrongIDs, a.ID)
			r.Wrong = append(r.Wrong, fmt.Sprintf("%s (%s %s): %s, %s: %s", a.ID, a.Kind, a.Service, o.Status, o.LastError, why))
		}
		failing := a.Kind == Permanent || a.Kind == UndoFlaky || a.Kind == UndoStuck || a.Kind == FulfilRejected
		cancels := a.Kind == Cancel || a.Kind == FulfilCancel
		cancelled := cancels && a.CancelAnswer == http.StatusAccepted
		switch o.Status {
		case order.StatusProcessed:
			switch {
			case failing:
				wrong("its test values refuse a step")
			case cancelled:
				wrong("the client's cancel was accepted")
			case a.Kind == FulfilCancel:
				wrong("its carrier never confirms delivery")
			case inPlace != calls || everUndone > 0:
				wrong(fmt.Sprintf("%d of %d effects in place, %d undos", inPlace, calls, everUndone))
			}
		case order.StatusFailed, order.StatusCancelled:
			if undoable > 0 {
				r.EffectsLeftInPlace += undoable
				wrong(fmt.Sprintf("%d effects left in place", undoable))
			}
			switch {
			case o.Status == order.StatusCancelled && !cancels:
				wrong("cancelled, but the client never cancelled it")
			case o.Status == order.StatusCancelled && a.CancelAnswer == http.StatusConflict:
				wrong("cancelled, but the cancel was refused")
			case o.Status == order.StatusFailed && !failing && strings.Contains(o.LastError, "timed out"):
				// Every attempt was lost (crashes, drops) or held
				// past its deadlines: the documented policy undoes it.
				r.GivenUp = append(r.GivenUp, fmt.Sprintf("%s (%s %s): %s", a.ID, a.Kind, a.Service, o.LastError))
			case o.Status == order.StatusFailed && !failing:
				wrong("failed, but nothing refuses its work")
			}
		case order.StatusError:
			// Only an operator can end it; it must have been alerted.
			r.ErrorsLeft++
		}
		if o.Status == order.StatusError || a.Redriven {
			if alerted[a.ID] > 0 {
				r.ErrorsAlerted++
			} else {
				r.ErrorsUnalerted++
				wrong("in Error without an alert")
			}
		}
	}
	sort.Float64s(took)
	sort.Slice(slow, func(i, j int) bool { return slow[i].seconds > slow[j].seconds })
	for _, o := range slow[:min(5, len(slow))] {
		r.Slowest = append(r.Slowest, fmt.Sprintf("%.0f s: %s", o.seconds, o.what))
	}
	r.P50Seconds, r.P99Seconds = quantile(took, 0.5), quantile(took, 0.99)
	if len(took) > 0 {
		r.MaxSeconds = took[len(took)-1]
	}
	if len(r.Wrong) > 20 {
		r.Wrong = r.Wrong[:20]
	}
	return r
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Print writes the report as a table.
func (r Report) Print(w io.Writer) {
	row := func(k string, v any) { fmt.Fprintf(w, "| %-46s | %v |\n", k, v) }
	fmt.Fprintf(w, "| %-46s | %s |\n|%s|---|\n", "soak", "result", "---")
	row("orders submitted / acknowledged", fmt.Sprintf("%d / %d", r.Run.Orders, r.Run.Acknowledged))
	kinds := slices.Sorted(maps.Keys(r.ByKind))
	for _, k := range kinds {
		row("  of kind "+string(k), r.ByKind[k])
	}
	row("runtime kill -9 / crashes at a fault / starts", fmt.Sprintf("%d / %d / %d", r.Run.Kills, r.Run.Crashes, r.Run.Starts))
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		row("  fault injected: "+k, r.Faults[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.CrashedAt)) {
		row("  crash "+k, r.CrashedAt[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Outcomes)) {
		row("outcome "+k, r.Outcomes[k])
	}
	row("workflow version changes and rollbacks", r.Run.Deploys)
	for _, k := range slices.Sorted(maps.Keys(r.ByVersion)) {
		row("  orders under version "+k, r.ByVersion[k])
	}
	row("lost", r.Lost)
	row("duplicate remote side effects (or undos)", r.DuplicateEffects)
	row("effects left in place by Failed/Cancelled", r.EffectsLeftInPlace)
	row("wrong outcomes", r.WrongOutcomes)
	row("given up after lost attempts, undone", len(r.GivenUp))
	row("orders in Error alerted / not alerted / left", fmt.Sprintf("%d / %d / %d", r.ErrorsAlerted, r.ErrorsUnalerted, r.ErrorsLeft))
	for _, k := range slices.Sorted(maps.Keys(r.Alerts)) {
		row("  alerts "+k, r.Alerts[k])
	}
	row("duplicate alerts (sent again) / copies (delivered twice)", fmt.Sprintf("%d / %d", r.DuplicateAlerts, r.AlertCopies))
	for _, k := range slices.Sorted(maps.Keys(r.DuplicatesByKind)) {
		row("  sent again "+k, r.DuplicatesByKind[k])
	}
	row("poison messages sent / in dead-letter queues", fmt.Sprintf("%d / %d", r.Poison.Sent, r.Poison.InDeadLetterQueues))
	for _, q := range slices.Sorted(maps.Keys(r.Poison.ByQueue)) {
		row("  in "+q, r.Poison.ByQueue[q])
	}
	row("terminal orders with a status event", fmt.Sprintf("%d / %d", r.Events.Published, r.Events.Terminal))
	wf := r.Waits
	row("kill -9 with orders waiting / orders waiting then", fmt.Sprintf("%d / %d", wf.KillsWhileWaiting, wf.WaitingAtKills))
	row("callbacks sent / retried (runtime down or 5xx)", fmt.Sprintf("%d / %d", wf.Tally.Callbacks, wf.Tally.Retried))
	row("  failed tries / retried delivered / given up", fmt.Sprintf("%d / %d / %d", wf.Tally.TriesFailed, wf.Tally.RetriedDelivered, wf.Tally.Undelivered))
	for _, k := range slices.Sorted(maps.Keys(wf.Answers)) {
		row("  fulfilment callback "+k, wf.Answers[k])
	}
	row("late callbacks answered 410 / duplicates as the first", fmt.Sprintf("%d / %d", wf.StaleRefused, wf.DuplicatesTaken))
	row("callbacks refused as bad (must be 0)", wf.Refused)
	row("events sent again (runtime down or 5xx)", wf.EventSendsFailed)
	row("fulfil-cancel orders cancelled while waiting", wf.CancelledWhileWaiting)
	if p := r.Pause; p != nil {
		p.print(row)
	}
	row("time to terminal p50 / p99 / max", fmt.Sprintf("%.1f s / %.1f s / %.1f s", r.P50Seconds, r.P99Seconds, r.MaxSeconds))
	for _, o := range r.Slowest {
		row("  slow", o)
	}
	row("submitting took / settling took (bound)", fmt.Sprintf("%s / %s (%s)", secs(r.Run.SubmitSeconds), secs(r.Run.SettleSeconds), secs(r.Run.BoundSeconds)))
	for _, id := range slices.Sorted(maps.Keys(r.Histories)) {
		fmt.Fprintf(w, "\nhistory of order %s:\n", id)
		for _, line := range r.Histories[id] {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

// Package simulator stands in for the remote inventory, payment and shipping
// services (and the examples' fraud and warehouse services) in the local run
// and the tests, and plays the people and partners who send the fulfilment
// example's events (Parties). Like a payment sandbox's test
// card numbers, documented SKU values make one service fail in a chosen way,
// so every failure the agents must survive can be produced on demand. It
// conforms to the remote-service contract (internal/adapter/remote's
// contract.json): schemathesis checks it in make test.
//
// # Contract
//
// Each service takes POST /inventory/reservations, /payment/charges,
// /shipping/shipments, /fraud/checks, /fraud/screenings or
// /warehouse/shipments with Content-Type: application/json, an
// Idempotency-Key header and the body
//
//	{"orderId":"...","customerId":"...","lines":[{"sku":"...","quantity":2}]}
//
// (other fields are ignored) and answers 201 {"id":"res_..."} (ch_... for
// payment, shp_... for shipping, wsh_... for the warehouse; the fraud
// check {"id":"fc_...", "score":0.123}, a low risk from 0 to 0.5; the
// fraud screening {"id":"fs_...","score":12,"flagged":false}, from 0 to 39,
// or 90 and flagged for a customerId starting TEST-FLAGGED). A body may carry earlier steps'
// answers, {"results": {"reserve-inventory": {"id": "res_..."}}}, as the
// checkout example's calls do: a result of reserve-inventory,
// charge-payment or fraud-check must name work that service did for the
// same order (422 otherwise; for a call to do work, not undone either), and
// an undo that carries its own step's result (the refund naming the
// charge) must name the work done under its key. With WithRequiredHeader a
// service answers 401 to a call without the header's value.
//
// A repeated call with the same Idempotency-Key after a success
// does no new work and answers 200 with the same id and the header
// Idempotent-Replayed: true, whatever the test value. Failures carry
// {"error":"..."}: 503 transient fault, 422 permanent fault, 400 missing or
// invalid Idempotency-Key or body, 422 Idempotency-Key reused with a
// different body (as the IETF Idempotency-Key draft has it), 404 unknown path, 405 not POST, 413 body over 64 KiB,
// 415 not JSON.
//
// # Callbacks
//
// A call whose body has a "callback" object (url, token, expiresAt: the
// call of a step whose service calls back) does the work, answers 202
// {"id":"...","status":"accepted"}, and, after the callback delay
// (WithCallbackDelay, 2 s by default), POSTs {"outcome":"succeeded",
// "result":<the answer a 201 would carry>} to the url with the header
// Authorization: Orderly-Callback <token>. The token is never logged. A
// callback that gets no answer (orderly is down), a 5xx or a 429 is sent
// again, half a second later, then after 1 s, then every 2 s while its
// token is valid (three tries at least); CallbackTally counts them. A
// call made again with the key (its wait ended) is accepted again and
// called back with its own token. TEST-<SERVICE>-CALLBACK-<KIND> values
// change the callbacks, and add up across lines: LATE (the first call's
// callbacks come a second after its token expired, so orderly answers
// 410; the call made again is called back in time), TWICE (each success
// sent twice), WORKING ("working" first), OUT-OF-ORDER ("working" after
// the success), FAILED ("failed" with the service's refusal, and no work
// done). Callbacks not sent yet are dropped at Close, as a service that
// restarts forgets them.
//
// # Polled services
//
// A call with the header Prefer: respond-async and no callback object
// (the call of a step whose service is polled) is accepted: 202
// {"id":"...","status":"accepted"} with Location: ../status/<service>/<id>
// (relative to the call's URL: /status/<service>/<id> under the
// simulator's base URL) and Retry-After: 1. A GET of the status URL
// answers 202 (Retry-After: 1) for the callback delay after the call,
// then does the work once, as doWork does for a call, and answers 200
// with the answer a 201 carries. The call made again with the key
// answers 202 with the same job, or its answer once done; an undo while
// the job works fences the key, and its check then answers 422. The id
// is derived from the collection and the key, and the call is in the
// ledger, so a simulator restarted with its ledger still answers. Lines
// TEST-<SERVICE>-POLL-<KIND> change the checks, and add up: FAILED (422
// with the service's refusal once the work's time passed, and no work
// done), SEE-OTHER (done answers 303 to <status URL>/result, whose GET
// answers the answer), MOVED (the first check answers 202 with a new
// Location; the old URL then points to the new one), FLAKY (the first
// check answers 503). A call without the preference is answered at once.
//
// # Undo
//
// POST /inventory/releases, /payment/refunds, /shipping/cancellations or
// /warehouse/cancellations, with the same body and the Idempotency-Key of the work to undo, undoes
// that work and answers 200 {"id":"rel_...","undid":"res_..."} (rf_ for
// payment, shc_ for shipping). When no work was done under the key it
// answers 200 {"id":"...","nothingToUndo":true}: undoing nothing is a
// success. Either way the key is fenced off: a later call to do its work
// (a retry that was still on its way, or a call the service still holds)
// does nothing and answers 422. A repeated undo answers 200 with the same
// id and Idempotent-Replayed: true.
//
// # Test values
//
// Any line of the order whose SKU is TEST-<SERVICE>-<MODE>, where SERVICE is
// INVENTORY, PAYMENT, SHIPPING, FRAUD or WAREHOUSE, makes that service (and only that one)
// misbehave. Calls are counted per service and Idempotency-Key, so each
// step of each order starts afresh:
//
//	MODE           effect on the named service
//	TRANSIENT-<N>  the first N calls answer 503, later calls succeed
//	PERMANENT      every call answers 422: inventory "sku out of stock",
//	               payment "card declined", shipping "address undeliverable",
//	               fraud "order flagged as a fraud risk"
//	PERMANENT-<N>  the first N calls answer 422, later calls succeed (the
//	               service was fixed: for trying an operator's redrive)
//	UNKNOWN        every call answers 404, as REST services answer for an
//	               entity they do not know: inventory "no such sku", payment
//	               "no such payment account", shipping "no such address",
//	               fraud "no such customer" (the agent fails only that order
//	               while the service answers others: see
//	               docs/remote-services.md, One order's 404)
//	HANG           no call is answered: each is held until the client gives
//	               up or the simulator closes
//	HANG-<N>       the first N calls are held as with HANG, later calls succeed
//	SLOW-<MS>      calls succeed after MS milliseconds (at most 60000); a
//	               client that gives up first leaves no work done behind
//
// TEST-<SERVICE>-UNDO-<MODE> does the same to the service's undo and
// leaves its work alone: TEST-PAYMENT-UNDO-PERMANENT refuses every refund
// ("refund refused"; inventory "reservation already picked", shipping
// "shipment already dispatched"), TEST-INVENTORY-UNDO-TRANSIENT-2 fails two
// releases, TEST-SHIPPING-UNDO-HANG holds every cancellation. An order may
// carry one value for the work and one for the undo of each service.
//
// For example TEST-PAYMENT-PERMANENT, TEST-INVENTORY-TRANSIENT-2,
// TEST-SHIPPING-HANG-1, TEST-PAYMENT-SLOW-1500. Every other SKU, including
// a TEST- value of another shape, is an ordinary product that is served at
// once; if several lines carry test values for one service, the first wins.
// When the simulator closes, calls it is holding are answered 503.
package simulator

package remote_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"orderly/internal/adapter/remote"
	"orderly/internal/order"
)

// A success's answer is the step's result: kept within the step's bound
// when a later call carries it, and matching its result schema. An answer
// that breaks either is a contract fault, whose reason names the rule and
// never the answer's values.
func TestAnswersBreakingTheStepsResultContractAreContractFaults(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["id","score"],"properties":{"score":{"type":"number","maximum":1}}}`)
	wf := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
		{Name: "fraud-check", Agent: "fraud", Call: order.Endpoint{Method: "POST", Path: "/checks"}, Carries: []string{"order"},
			ResultMaxBytes: 64, ResultSchema: schema},
		{Name: "charge", Agent: "payment", Call: order.Endpoint{Method: "POST", Path: "/charges"}, Carries: []string{"order", "fraud-check"},
			UndoCall: order.Endpoint{Method: "POST", Path: "/refunds"}, Undo: "refund", UndoCarries: []string{"order"}, ResultMaxBytes: 64},
	}}
	versions := order.MustVersions(wf)
	tests := []struct {
		name, step, answer string
		undo               bool
		want               error
		mention            string
	}{
		{"within the bound and the schema", "fraud-check", `{"id":"f1","score":0.2}`, false, nil, ""},
		{"over the bound", "fraud-check", `{"id":"f1","score":0.2,"note":"` + strings.Repeat("s3cr3t", 20) + `"}`, false, order.ErrContract, "keeps at most 64"},
		{"a field missing", "fraud-check", `{"id":"f1"}`, false, order.ErrContract, "at score"},
		{"a field out of range", "fraud-check", `{"id":"f1","score":7}`, false, order.ErrContract, "at score"},
		// A queue message cannot carry it, and escaped it takes twice the
		// bytes maxBytes counted.
		{"a kept result holding U+FFFF", "fraud-check", "{\"id\":\"f1\",\"score\":0.2,\"n\":\"\uFFFF\"}", false, order.ErrContract, "U+FFFF"},
		{"a kept result holding U+FFFF escaped", "fraud-check", `{"id":"f1","score":0.2,"n":"\uffff"}`, false, nil, ""},
		// No later call carries charge's answer: it is not kept, so not bounded.
		// Over what an agent reads at all, kept or not: no retry shortens it.
		{"over 64 KiB", "charge", `{"id":"ch1","note":"` + strings.Repeat("x", 64<<10) + `"}`, false, order.ErrContract, "over 64 KiB"},
		{"not kept, not bounded", "charge", `{"id":"ch1","note":"` + strings.Repeat("x", 200) + `"}`, false, nil, ""},
		{"an undo's answer needs only its id", "charge", `{"id":"rf1","note":"` + strings.Repeat("x", 200) + `"}`, true, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(http.StatusOK, nil, tt.answer))
			defer ts.Close()
			agent := "fraud"
			if tt.step == "charge" {
				agent = "payment"
			}
			req := order.StepRequest{OrderID: "O1", Workflow: "checkout", Version: "1", Step: tt.step, Undo: tt.undo, Attempt: 1,
				IdempotencyKey: "k1", Input: json.RawMessage(`{"customerId":"c"}`)}
			answer, err := remote.NewClient(ts.URL, ts.Client(), versions).Call(t.Context(), agent, req)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Call() = %+v, %v; want %v", answer, err, tt.want)
			}
			if err != nil {
				reason := order.ReasonFor(err)
				if !strings.Contains(reason, tt.mention) || strings.Contains(reason, "s3cr3t") || !strings.Contains(reason, "operator") {
					t.Errorf("reason %q, want it to name %q and not the answer", reason, tt.mention)
				}
				return
			}
			if tt.undo || answer.Body == nil {
				return
			}
			if !json.Valid(answer.Body) || answer.Reference == "" {
				t.Errorf("answer %+v, want the reference and the compacted body", answer)
			}
		})
	}
}

// A request of a workflow this build does not run is never called.
func TestRequestOfAnUnknownWorkflowIsNotCalled(t *testing.T) {
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; fmt.Fprint(w, `{"id":"x"}`) }))
	defer ts.Close()
	req := stepRequest("k1")
	req.Workflow = "someone-elses"
	if _, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", req); !errors.Is(err, order.ErrNotInBuild) || calls != 0 {
		t.Errorf("Call() = %v after %d calls, want order.ErrNotInBuild and none", err, calls)
	}
}

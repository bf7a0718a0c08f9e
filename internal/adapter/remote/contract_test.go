package remote_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"orderly/internal/adapter/remote"
	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

var update = flag.Bool("update", false, "rewrite contract.json from remote.Contract")

// The contract in the repository (contract.json, which docs/remote-services.md links) is
// the one the code describes.
func TestContractFileIsTheDocument(t *testing.T) {
	want := remote.ContractJSON()
	if *update {
		if err := os.WriteFile("contract.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("contract.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("contract.json differs from remote.ContractJSON(): run go test ./internal/adapter/remote -run TestContractFileIsTheDocument -update")
	}
	var doc map[string]any
	if err := json.Unmarshal(got, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("contract.json: %v, openapi %v, want 3.1.0", err, doc["openapi"])
	}
}

// workflows are the shipped workflow and the checkout example, with an
// input for each.
func workflows(t *testing.T) []struct {
	w     order.Workflow
	input json.RawMessage
} {
	t.Helper()
	shipped, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	v, err := definition.Build(append(shipped, examples...), definition.ShippedWorkflow, order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	orderWf, _ := v.LatestOf("order")
	checkout, ok := v.LatestOf("checkout")
	if !ok {
		t.Fatal("no checkout workflow")
	}
	var schema struct {
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(checkout.Input, &schema); err != nil || len(schema.Examples) == 0 {
		t.Fatalf("checkout examples: %v", err)
	}
	return []struct {
		w     order.Workflow
		input json.RawMessage
	}{
		{orderWf, json.RawMessage(`{"customerId":"c-1","lines":[{"sku":"SKU-1","quantity":2}],"notificationTarget":"https://example.com/hook"}`)},
		{checkout, schema.Examples[0]},
	}
}

// contractCheck checks requests and answers against a workflow's
// contract document, with the JSON Schema library the definitions use.
type contractCheck struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

const docURL = "mem:///contract.json"

func newContractCheck(t *testing.T, w order.Workflow) *contractCheck {
	t.Helper()
	raw, err := remote.ContractJSONFor(w)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	loaded, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := definition.NewCompiler()
	if err := c.AddResource(docURL, loaded); err != nil {
		t.Fatal(err)
	}
	return &contractCheck{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// check reports what value breaks of the schema at ptr in the document.
func (c *contractCheck) check(ptr string, value []byte) error {
	s, ok := c.schemas[ptr]
	if !ok {
		var err error
		if s, err = c.compiler.Compile(docURL + "#" + ptr); err != nil {
			return fmt.Errorf("compile %s: %w", ptr, err)
		}
		c.schemas[ptr] = s
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

// operation returns the document's operation for method and path.
func (c *contractCheck) operation(method, path string) (map[string]any, error) {
	item, ok := c.doc["paths"].(map[string]any)[path].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no path %s in the contract", path)
	}
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no %s %s in the contract", method, path)
	}
	return op, nil
}

// request reports every way r (with its body) breaks the contract.
func (c *contractCheck) request(r *http.Request, body []byte) []string {
	op, err := c.operation(r.Method, r.URL.Path)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	params, _ := op["parameters"].([]any)
	for i, p := range params {
		p := p.(map[string]any)
		if p["in"] != "header" {
			continue
		}
		name := p["name"].(string)
		v := r.Header.Get(name)
		if v == "" {
			if p["required"] == true {
				problems = append(problems, "header "+name+" is missing")
			}
			continue
		}
		quoted, _ := json.Marshal(v)
		if err := c.check(pointer("paths", r.URL.Path, strings.ToLower(r.Method), "parameters", strconv.Itoa(i), "schema"), quoted); err != nil {
			problems = append(problems, "header "+name+": "+err.Error())
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		problems = append(problems, "Content-Type "+ct)
	}
	if err := c.check(pointer("paths", r.URL.Path, strings.ToLower(r.Method), "requestBody", "content", "application/json", "schema"), body); err != nil {
		problems = append(problems, "body: "+err.Error())
	}
	return problems
}

// response returns the document's response for status (its own, else its
// range's) and that response's key.
func (c *contractCheck) response(method, path string, status int) (map[string]any, string, error) {
	op, err := c.operation(method, path)
	if err != nil {
		return nil, "", err
	}
	responses := op["responses"].(map[string]any)
	for _, key := range []string{strconv.Itoa(status), fmt.Sprintf("%dXX", status/100)} {
		if r, ok := responses[key].(map[string]any); ok {
			return r, key, nil
		}
	}
	return nil, "", fmt.Errorf("%s %s: status %d is not in the contract", method, path, status)
}

// answerSchema is the JSON pointer of the answer's schema for status.
func (c *contractCheck) answerSchema(method, path string, status int) (string, bool) {
	r, key, err := c.response(method, path, status)
	if err != nil {
		return "", false
	}
	if _, ok := r["content"]; !ok {
		return "", false
	}
	return pointer("paths", path, strings.ToLower(method), "responses", key, "content", "application/json", "schema"), true
}

// The real client's every request, for every step of both workflows and
// their undos, is one the contract describes: method and path, the
// Idempotency-Key, JSON, the body with orderId, the input and the
// carried results. The services' answers the contract allows are taken
// as successes.
func TestClientRequestsMatchTheContract(t *testing.T) {
	for _, tc := range workflows(t) {
		t.Run(tc.w.Name, func(t *testing.T) {
			check := newContractCheck(t, tc.w)
			var mu sync.Mutex
			var problems []string
			seen := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				answer := []byte(`{"id":"ref-` + strings.ReplaceAll(strings.Trim(r.URL.Path, "/"), "/", "-") + `","score":0.25}`)
				mu.Lock()
				seen++
				for _, p := range check.request(r, body) {
					problems = append(problems, r.Method+" "+r.URL.Path+": "+p)
				}
				if ptr, ok := check.answerSchema(r.Method, r.URL.Path, http.StatusCreated); !ok {
					problems = append(problems, r.Method+" "+r.URL.Path+": no answer schema for 201")
				} else if err := check.check(ptr, answer); err != nil {
					problems = append(problems, r.Method+" "+r.URL.Path+": the test's answer: "+err.Error())
				}
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				w.Write(answer)
			}))
			defer srv.Close()
			client := remote.NewClient(srv.URL, srv.Client(), order.MustVersions(tc.w))
			results := map[string]json.RawMessage{}
			calls := 0
			for _, d := range tc.w.Steps {
				req := order.StepRequest{OrderID: "ORDER1", Workflow: tc.w.Name, Version: tc.w.Version, Step: d.Name, Attempt: 1,
					IdempotencyKey: "KEY-" + d.Name, Input: tc.input, Results: results}
				a, err := client.Call(t.Context(), d.Agent, req)
				if err != nil {
					t.Fatalf("%s: %v", d.Name, err)
				}
				calls++
				results[d.Name] = a.Body
				if d.Undo != "" {
					req.Undo, req.Record, req.Results = true, len(tc.w.Steps), results
					if _, err := client.Call(t.Context(), d.Agent, req); err != nil {
						t.Fatalf("undo %s: %v", d.Name, err)
					}
					calls++
				}
			}
			if seen != calls || calls < len(tc.w.Steps) {
				t.Errorf("the server saw %d calls, the client made %d", seen, calls)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// The check above can fail: requests that break the contract are caught.
func TestContractCheckCatchesBadRequests(t *testing.T) {
	tc := workflows(t)[1] // checkout: charge-payment carries fraud-check's result
	check := newContractCheck(t, tc.w)
	good := func() (*http.Request, map[string]any) {
		r := httptest.NewRequest(http.MethodPost, "/payment/charges", nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "KEY1")
		var body map[string]any
		if err := json.Unmarshal(tc.input, &body); err != nil {
			t.Fatal(err)
		}
		body["orderId"] = "ORDER1"
		body["results"] = map[string]any{"fraud-check": map[string]any{"id": "fc_1", "score": 0.1}}
		return r, body
	}
	tests := []struct {
		name   string
		change func(r *http.Request, body map[string]any)
		want   string
	}{
		{"good", func(*http.Request, map[string]any) {}, ""},
		{"no key", func(r *http.Request, _ map[string]any) { r.Header.Del("Idempotency-Key") }, "header Idempotency-Key is missing"},
		{"a key with a space", func(r *http.Request, _ map[string]any) { r.Header.Set("Idempotency-Key", "a b") }, "header Idempotency-Key"},
		{"no orderId", func(_ *http.Request, b map[string]any) { delete(b, "orderId") }, "body"},
		{"no input field", func(_ *http.Request, b map[string]any) { delete(b, "amount") }, "body"},
		{"a field the input does not have", func(_ *http.Request, b map[string]any) { b["extra"] = 1 }, "body"},
		{"no carried result", func(_ *http.Request, b map[string]any) { b["results"] = map[string]any{} }, "body"},
		{"a result without its id", func(_ *http.Request, b map[string]any) {
			b["results"] = map[string]any{"fraud-check": map[string]any{"score": 0.1}}
		}, "body"},
		{"a result breaking its schema", func(_ *http.Request, b map[string]any) {
			b["results"] = map[string]any{"fraud-check": map[string]any{"id": "fc_1", "score": 7}}
		}, "body"},
		{"not JSON", func(r *http.Request, _ map[string]any) { r.Header.Set("Content-Type", "text/plain") }, "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, body := good()
			tt.change(r, body)
			raw, _ := json.Marshal(body)
			got := strings.Join(check.request(r, raw), "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
	if check.request(httptest.NewRequest(http.MethodPost, "/payment/elsewhere", nil), []byte(`{}`)) == nil {
		t.Error("a path the workflow does not call: no problem")
	}
}

// Every status a service may answer is in the contract, and the class the
// contract gives it is the one the client takes it for: success,
// transient (with Retry-After honoured), permanent or configuration.
func TestClientClassesMatchTheContract(t *testing.T) {
	tc := workflows(t)[0]
	check := newContractCheck(t, tc.w)
	step := tc.w.Steps[1]
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "https://elsewhere.example/")
		}
		w.WriteHeader(status)
		if status >= 200 && status < 300 {
			io.WriteString(w, `{"id":"ch_1"}`)
			return
		}
		io.WriteString(w, `{"error":"no"}`)
	}))
	defer srv.Close()
	client := remote.NewClient(srv.URL, srv.Client(), order.MustVersions(tc.w))
	req := order.StepRequest{OrderID: "ORDER1", Workflow: tc.w.Name, Version: tc.w.Version, Step: step.Name, Attempt: 1,
		IdempotencyKey: "KEY1", Input: tc.input}
	classes := map[remote.Class]int{}
	for status = 200; status < 600; status++ {
		if status == http.StatusSwitchingProtocols || status == http.StatusNoContent || status == http.StatusNotModified || status == http.StatusResetContent {
			continue // answers without a body, which no service sends for a call
		}
		resp, key, err := check.response(step.Call.Method, step.Call.Path, status)
		if err != nil {
			t.Errorf("%d: %v", status, err)
			continue
		}
		want := remote.Class(fmt.Sprint(resp["x-orderly-class"]))
		_, callErr := client.Call(t.Context(), step.Agent, req)
		got := remote.ClassOf(callErr)
		if got != want {
			t.Errorf("status %d: the client takes it as %s (%v), the contract (%s) says %s", status, got, callErr, key, want)
		}
		if remote.StatusClass(status) != want {
			t.Errorf("status %d: StatusClass %s, the contract says %s", status, remote.StatusClass(status), want)
		}
		headers, _ := resp["headers"].(map[string]any)
		_, declared := headers["Retry-After"]
		after, honoured := order.RetryAfter(callErr)
		if declared != (want == remote.ClassTransient) {
			t.Errorf("status %d (%s): Retry-After declared %t", status, want, declared)
		}
		if want == remote.ClassTransient && (!honoured || after != 7*time.Second) {
			t.Errorf("status %d: RetryAfter %s %t, want 7s", status, after, honoured)
		}
		classes[want]++
	}
	for _, c := range []remote.Class{remote.ClassSuccess, remote.ClassTransient, remote.ClassPermanent, remote.ClassConfiguration} {
		if classes[c] == 0 {
			t.Errorf("no status of class %s", c)
		}
	}
}

// A step that waits calls no service: a workflow's contract has its
// calls' operations only, and no operation without a method and path.
func TestContractLeavesOutStepsThatWait(t *testing.T) {
	w := ordertest.OrderWorkflow(order.DefaultTiming)
	w.Steps = slices.Insert(slices.Clone(w.Steps), 1, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: time.Minute}},
		order.StepDef{Name: "manual-review", Wait: &order.Wait{Event: "review", Timeout: time.Hour}})
	doc, err := remote.ContractFor(w)
	if err != nil {
		t.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	var ops []string
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			ops = append(ops, method+" "+path+" "+op.(map[string]any)["operationId"].(string))
		}
	}
	if len(ops) != 6 || paths[""] != nil {
		t.Errorf("operations %v, want the three calls and three undos only", ops)
	}
}

// A polled step's contract says what its client does: the call carries
// Prefer: respond-async and its 202 is the call accepted; each status a
// check of the status URL can get is taken as the status's operation
// says (202 accepted, 200 and a 302 or 303 to the answer done, 4xx
// permanent but the configuration statuses, 408, 429 and 5xx
// transient), and Retry-After is declared wherever it is read.
func TestPolledStepsContract(t *testing.T) {
	tc := workflows(t)[0]
	w := tc.w
	w.Steps = slices.Clone(w.Steps)
	i, _ := w.Index(ordertest.StepChargePayment)
	step := &w.Steps[i]
	step.Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	check := newContractCheck(t, w)
	var status int
	var problems []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			problems = append(problems, check.request(r, body)...)
			rw.Header().Set("Location", "/status/1")
			rw.Header().Set("Retry-After", "7")
			rw.WriteHeader(http.StatusAccepted)
		case r.URL.Path == "/answer":
			io.WriteString(rw, `{"id":"ch_1"}`)
		default:
			rw.Header().Set("Retry-After", "7")
			rw.Header().Set("Location", "/answer")
			rw.WriteHeader(status)
			if status >= 200 && status < 300 {
				io.WriteString(rw, `{"id":"ch_1"}`)
				return
			}
			io.WriteString(rw, `{"error":"no"}`)
		}
	}))
	defer srv.Close()
	client := remote.NewClient(srv.URL, srv.Client(), order.MustVersions(w))
	req := order.StepRequest{OrderID: "ORDER1", Workflow: w.Name, Version: w.Version, Step: step.Name, Attempt: 1, IdempotencyKey: "KEY1",
		Input: tc.input, Results: map[string]json.RawMessage{ordertest.StepReserveInventory: json.RawMessage(`{"id":"res_1"}`)}}
	ans, err := client.Call(t.Context(), step.Agent, req)
	resp, _, cerr := check.response(step.Call.Method, step.Call.Path, http.StatusAccepted)
	if err != nil || !ans.Accepted || cerr != nil || resp["x-orderly-class"] != string(remote.ClassAccepted) {
		t.Fatalf("the call: %+v, %v; the contract's 202: %v, %v", ans, err, resp, cerr)
	}
	if headers, _ := resp["headers"].(map[string]any); headers["Location"] == nil || headers["Retry-After"] == nil {
		t.Errorf("the call's 202 declares headers %v, want Location and Retry-After", headers)
	}
	if len(problems) > 0 {
		t.Errorf("the call breaks the contract: %v", problems)
	}

	statusOp := check.doc["components"].(map[string]any)["pathItems"].(map[string]any)[step.Name+".Status"].(map[string]any)["get"].(map[string]any)
	responses := statusOp["responses"].(map[string]any)
	req.Poll = ans.StatusURL
	classes := map[remote.Class]int{}
	for status = 200; status < 600; status++ {
		if status == http.StatusSwitchingProtocols || status == http.StatusNoContent || status == http.StatusNotModified || status == http.StatusResetContent {
			continue
		}
		resp, key := responses[strconv.Itoa(status)], strconv.Itoa(status)
		if resp == nil {
			key = fmt.Sprintf("%dXX", status/100)
			resp = responses[key]
		}
		if resp == nil {
			t.Errorf("status %d of a check is not in the contract", status)
			continue
		}
		want := remote.Class(fmt.Sprint(resp.(map[string]any)["x-orderly-class"]))
		ans, err := client.Call(t.Context(), step.Agent, req)
		got := remote.ClassOf(err)
		if err == nil && ans.Accepted {
			got = remote.ClassAccepted
		}
		if got != want {
			t.Errorf("a check answered %d: the client takes it as %s (%v), the contract (%s) says %s", status, got, err, key, want)
		}
		headers, _ := resp.(map[string]any)["headers"].(map[string]any)
		if _, declared := headers["Retry-After"]; declared != (want == remote.ClassTransient || want == remote.ClassAccepted) {
			t.Errorf("a check answered %d (%s): Retry-After declared %t", status, want, declared)
		}
		classes[want]++
	}
	for _, c := range []remote.Class{remote.ClassAccepted, remote.ClassSuccess, remote.ClassTransient, remote.ClassPermanent, remote.ClassConfiguration} {
		if classes[c] == 0 {
			t.Errorf("no status of a check of class %s", c)
		}
	}
}

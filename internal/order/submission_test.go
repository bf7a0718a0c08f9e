package order_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// submissionBody renders a body with customer and the given lines; lines is
// raw JSON so that tests can put malformed values in it.
func submissionBody(customer string, lines ...string) string {
	c, _ := json.Marshal(customer)
	return fmt.Sprintf(`{"customerId":%s,"lines":[%s]}`, c, strings.Join(lines, ","))
}

func line(sku string, quantity any) string {
	s, _ := json.Marshal(sku)
	q, _ := json.Marshal(quantity)
	return fmt.Sprintf(`{"sku":%s,"quantity":%s}`, s, q)
}

// distinctLines returns n valid lines with different SKUs.
func distinctLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line(fmt.Sprintf("SKU-%03d", i), 1)
	}
	return lines
}

func fieldNames(err error) []string {
	var ve *order.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	names := make([]string, len(ve.Fields))
	for i, f := range ve.Fields {
		names[i] = f.Field
	}
	return names
}

// shipped checks a submission against the shipped order workflow's input
// schema, as the API does.
var shipped = func() order.InputCheck {
	schema, err := definition.CompileSchema(ordertest.Built(order.DefaultTiming).Latest().Input)
	if err != nil {
		panic(err)
	}
	return func(doc []byte) []order.FieldError {
		var out []order.FieldError
		for _, p := range schema.Check(doc) {
			out = append(out, order.FieldError{Field: cmp.Or(p.Field, "body"), Problem: p.Problem})
		}
		return out
	}
}()

func parse(body string) (ordertest.Submission, error) {
	input, _, err := order.ParseInput([]byte(body), shipped)
	if err != nil {
		return ordertest.Submission{}, err
	}
	var s ordertest.Submission
	if err := json.Unmarshal(input, &s); err != nil {
		return s, err
	}
	return s, nil
}

func TestParseInputRejects(t *testing.T) {
	valid := line("ABC-1", 2)
	tests := []struct {
		name      string
		body      string
		wantField string
		// wantProblem is a fragment of that field's problem.
		wantProblem string
	}{
		{"missing customerId", `{"lines":[` + valid + `]}`, "customerId", "required"},
		{"empty customerId", submissionBody("", valid), "customerId", "Length"},
		{"customerId over limit", submissionBody(strings.Repeat("c", 129), valid), "customerId", "Length"},
		{"customerId with control character", submissionBody("cust\x01omer", valid), "customerId", "U+0001"},
		{"customerId with DEL", submissionBody("cust\x7f", valid), "customerId", "U+007F"},
		{"customerId with newline", submissionBody("cust\nomer", valid), "customerId", "U+000A"},
		{"missing lines", `{"customerId":"c-1"}`, "lines", "required"},
		{"empty lines", submissionBody("c-1"), "lines", "0"},
		{"101 lines", submissionBody("c-1", distinctLines(101)...), "lines", "101"},
		{"SKU with space", submissionBody("c-1", line("A B", 1)), "lines[0].sku", "form"},
		{"SKU with slash", submissionBody("c-1", line("A/../B", 1)), "lines[0].sku", "form"},
		{"SKU starting with dash", submissionBody("c-1", line("-A", 1)), "lines[0].sku", "form"},
		{"SKU not ASCII", submissionBody("c-1", line("ÄPFEL", 1)), "lines[0].sku", "form"},
		{"SKU missing", submissionBody("c-1", `{"quantity":1}`), "lines[0].sku", "required"},
		{"SKU over limit", submissionBody("c-1", line(strings.Repeat("S", 65), 1)), "lines[0].sku", "Length"},
		{"quantity 0", submissionBody("c-1", line("A", 0)), "lines[0].quantity", "minimum"},
		{"quantity missing", submissionBody("c-1", `{"sku":"A"}`), "lines[0].quantity", "required"},
		{"quantity over max", submissionBody("c-1", line("A", 10001)), "lines[0].quantity", "maximum"},
		{"quantity 1.5", submissionBody("c-1", `{"sku":"A","quantity":1.5}`), "lines[0].quantity", "integer"},
		{"quantity as string", submissionBody("c-1", `{"sku":"A","quantity":"3"}`), "lines[0].quantity", "integer"},
		{"lines not an array", `{"customerId":"c-1","lines":{"sku":"A"}}`, "lines", "array"},
		{"unknown top-level field", `{"customerId":"c-1","lines":[` + valid + `],"discount":50}`, "body", "discount"},
		{"unknown line field", submissionBody("c-1", `{"sku":"A","quantity":1,"price":3}`), "lines[0]", "price"},
		{"field name in another case", `{"customerId":"a","CUSTOMERID":"b","lines":[` + valid + `]}`, "body", "CUSTOMERID"},
		{"second object after the first", submissionBody("c-1", valid) + submissionBody("c-2", valid), "body", "after"},
		{"garbage after the object", submissionBody("c-1", valid) + ` x`, "body", "after"},
		{"empty body", ``, "body", "empty"},
		{"whitespace body", " \n\t", "body", "empty"},
		{"truncated JSON", `{"customerId":"c-1","lines":[`, "body", "malformed"},
		{"not JSON", `customerId=c-1`, "body", "malformed"},
		{"JSON array", `[1,2]`, "body", "object"},
		{"null", `null`, "body", "object"},
		{"notificationTarget over limit", `{"customerId":"c-1","lines":[` + valid + `],"notificationTarget":"` + strings.Repeat("n", 2049) + `"}`, "notificationTarget", "Length"},
		{"duplicate key", `{"customerId":"a","customerId":"b","lines":[` + valid + `]}`, "customerId", "more than once"},
		{"duplicate key in a line", `{"customerId":"a","lines":[{"sku":"A","sku":"B","quantity":1}]}`, "lines[0].sku", "more than once"},
		{"invalid UTF-8", "{\"customerId\":\"a\xff\",\"lines\":[" + valid + "]}", "body", "UTF-8"},
		{"lone surrogate", `{"customerId":"a\ud800b","lines":[` + valid + `]}`, "customerId", "U+FFFD"},
		{"noncharacter U+FFFE", submissionBody("a\ufffeb", valid), "customerId", "U+FFFE"},
		{"right-to-left override", submissionBody("abc\u202edef", valid), "customerId", "U+202E"},
		{"zero-width space", submissionBody("ab\u200bc", valid), "customerId", "U+200B"},
		{"NUL in notificationTarget", `{"customerId":"a","lines":[` + valid + `],"notificationTarget":"q\u0000x"}`, "notificationTarget", "U+0000"},
		{"null notificationTarget", `{"customerId":"a","lines":[` + valid + `],"notificationTarget":null}`, "notificationTarget", "string"},
		{"null quantity", `{"customerId":"a","lines":[{"sku":"A","quantity":null}]}`, "lines[0].quantity", "integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.body)
			if err == nil {
				t.Fatalf("ParseInput() = %+v, nil; want an error", got)
			}
			if !errors.Is(err, order.ErrInvalid) || errors.Is(err, order.ErrTooLarge) {
				t.Errorf("ParseInput() error %v: want ErrInvalid, not ErrTooLarge", err)
			}
			var ve *order.ValidationError
			errors.As(err, &ve)
			if i := slices.IndexFunc(ve.Fields, func(f order.FieldError) bool { return f.Field == tt.wantField }); i < 0 ||
				!strings.Contains(ve.Fields[i].Problem, tt.wantProblem) {
				t.Errorf("got problems %+v, want %s mentioning %q", ve.Fields, tt.wantField, tt.wantProblem)
			}
		})
	}
}

// Several problems are reported at once, each at its field.
func TestParseInputReportsEveryProblem(t *testing.T) {
	_, err := parse(submissionBody("", line("A", 1), line("bad sku!", 0), line("B", 10_001)))
	got := fieldNames(err)
	for _, want := range []string{"customerId", "lines[1].sku", "lines[1].quantity", "lines[2].quantity"} {
		if !slices.Contains(got, want) {
			t.Errorf("fields %q, want %s among them (error: %v)", got, want, err)
		}
	}
}

func TestParseInputTooLarge(t *testing.T) {
	body := submissionBody(strings.Repeat("c", order.MaxInputBytes), line("A", 1))
	_, _, err := order.ParseInput([]byte(body), shipped)
	if !errors.Is(err, order.ErrTooLarge) || errors.Is(err, order.ErrInvalid) {
		t.Fatalf("ParseInput(%d-byte body) error = %v, want only ErrTooLarge", len(body), err)
	}
}

func TestParseInputAccepts(t *testing.T) {
	atLimit := submissionBody("c-1", line("A", 1))
	atLimit += strings.Repeat(" ", order.MaxInputBytes-len(atLimit))
	for name, body := range map[string]string{
		"one line": `{"customerId":"cust-42","lines":[{"sku":"ABC-1","quantity":2}]}`,
		"limits of every rule, pretty-printed": "{\n  \"customerId\": \"" + strings.Repeat("c", 128) + "\",\n" +
			"  \"lines\": [\n    {\"sku\": \"a.b_c:d-9\", \"quantity\": 1},\n" +
			"    {\"sku\": \"" + strings.Repeat("S", 64) + "\", \"quantity\": 10000}\n  ],\n" +
			"  \"notificationTarget\": \"arn:aws:sqs:eu-west-1:123456789012:progress\"\n}\n",
		"100 lines":                      submissionBody("c-1", distinctLines(100)...),
		"body exactly at the size limit": atLimit,
		"Unicode letters":                `{"customerId":"Zoë Ångström 東京","lines":[{"sku":"A-1","quantity":1}],"notificationTarget":"https://example.com/hooks/zoë"}`,
		"128 two-byte characters":        submissionBody(strings.Repeat("é", 128), line("A", 1)),
	} {
		if _, err := parse(body); err != nil {
			t.Errorf("%s: %v, want it accepted", name, err)
		}
	}
	// The input is kept as sent, compacted.
	input, _, err := order.ParseInput([]byte(`{ "lines": [ {"sku":"A","quantity":1} ], "customerId": "c" }`), shipped)
	if err != nil || string(input) != `{"lines":[{"sku":"A","quantity":1}],"customerId":"c"}` {
		t.Errorf("input %s, %v; want the body compacted, its order kept", input, err)
	}
}

func TestValidationErrorMessage(t *testing.T) {
	err := &order.ValidationError{Fields: []order.FieldError{
		{Field: "customerId", Problem: "is required"},
		{Field: "lines[1].quantity", Problem: "must be between 1 and 10000, got 0"},
	}}
	got := err.Error()
	want := "customerId: is required; lines[1].quantity: must be between 1 and 10000, got 0"
	if got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("submit: %w", err), order.ErrInvalid) {
		t.Errorf("errors.Is(wrapped ValidationError, ErrInvalid) = false, want true")
	}
}

func TestInputHash(t *testing.T) {
	hash := func(t *testing.T, body string) string {
		t.Helper()
		_, h, err := order.ParseInput([]byte(body), shipped)
		if err != nil {
			t.Fatalf("ParseInput(%s) error = %v", body, err)
		}
		return h
	}
	base := `{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`
	want := hash(t, base)
	for _, body := range []string{
		"{\n  \"customerId\": \"c-1\",\n  \"lines\": [\n    {\"sku\": \"A\", \"quantity\": 1},\n    {\"sku\": \"B\", \"quantity\": 2}\n  ]\n}\n",
		`{"lines":[{"quantity":1,"sku":"A"},{"quantity":2,"sku":"B"}],"customerId":"c-1"}`,
		`{"customerId":"\u0063-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`,
	} {
		if got := hash(t, body); got != want {
			t.Errorf("hash of %s = %s, want %s (the hash of %s)", body, got, want, base)
		}
	}
	for _, body := range []string{
		`{"customerId":"c-2","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`,
		`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":3}]}`,
		`{"customerId":"c-1","lines":[{"sku":"B","quantity":2},{"sku":"A","quantity":1}]}`,
		`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}],"notificationTarget":"q"}`,
	} {
		if got := hash(t, body); got == want {
			t.Errorf("hash of %s = the hash of %s; want them to differ", body, base)
		}
	}
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		t.Errorf("hash %q, want 64 lowercase hex digits", want)
	}
}

func TestValidateIdempotencyKey(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		wantErr bool
	}{
		{"uuid", "0b6a3c0e-4f1e-4c8e-9a43-0d8c5b7e2f11", false},
		{"printable punctuation", "order:42/retry#1~!", false},
		{"at length limit", strings.Repeat("k", order.MaxIdempotencyKeyLen), false},
		{"over length limit", strings.Repeat("k", order.MaxIdempotencyKeyLen+1), true},
		{"empty", "", true},
		{"only spaces", "   ", true},
		{"inner space", "a b", true},
		{"tab", "a\tb", true},
		{"newline", "key\n", true},
		{"DEL", "key\x7f", true},
		{"not ASCII", "clé", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := order.ValidateIdempotencyKey(tt.key)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("ValidateIdempotencyKey(%q) = %v, want error: %t", tt.key, err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, order.ErrInvalid) {
				t.Errorf("ValidateIdempotencyKey(%q) = %v, want errors.Is ErrInvalid", tt.key, err)
			}
			if got := fieldNames(err); !slices.Equal(got, []string{"Idempotency-Key"}) {
				t.Errorf("ValidateIdempotencyKey(%q) fields = %q, want [Idempotency-Key]", tt.key, got)
			}
		})
	}
}

// An order of the shipped workflow submitted before inputs (hashed as its
// Go struct then) is replayed, not refused as a conflict, when its client
// retries with the same key and body after the upgrade.
func TestLegacyHashMatchesTheOneStoredBeforeInputs(t *testing.T) {
	const before = "ae4d76478319640e273870d580dd342d471f9de1927ee5ef75801c06b168d6d1" // sha256 of the old Submission's JSON
	for _, body := range []string{
		`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`,
		`{"lines":[{"quantity":1,"sku":"A"},{"sku":"B","quantity":2}],"customerId":"c-1"}`,
	} {
		input, _, err := order.ParseInput([]byte(body), shipped)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := order.LegacyHash(input); !ok || got != before {
			t.Errorf("LegacyHash(%s) = %s, %t; want %s, the hash stored before inputs", body, got, ok, before)
		}
	}
	// An input the old shape cannot hold has no legacy hash.
	if _, ok := order.LegacyHash([]byte(`{"customerId":"c-1","lines":[],"giftWrap":true}`)); ok {
		t.Error("an input with a field the old shape lacks got a legacy hash")
	}
}

// An input may not take the names of the body's or the view's own fields,
// whatever its workflow's schema allows: a client's "results" must never
// reach a service as if the engine had sent them.
func TestParseInputRefusesReservedNames(t *testing.T) {
	for _, name := range order.ReservedInput {
		body := `{"customerId":"c","` + name + `":{"charge-payment":{"id":"forged"}}}`
		_, _, err := order.ParseInput([]byte(body), nil)
		if got := fieldNames(err); !slices.Contains(got, name) {
			t.Errorf("%s: fields %v (%v), want it refused", name, got, err)
		}
	}
}

// A queue message cannot carry U+FFFE or U+FFFF: a body holding one is
// refused, naming it; written escaped, it is taken as sent.
func TestParseInputRefusesWhatAQueueCannotCarry(t *testing.T) {
	for _, body := range []string{"{\"note\":\"a\uFFFFb\"}", "{\"a\uFFFE\":1}"} {
		_, _, err := order.ParseInput([]byte(body), nil)
		var v *order.ValidationError
		if !errors.As(err, &v) || len(v.Fields) != 1 || v.Fields[0].Field != "body" || !strings.Contains(v.Fields[0].Problem, "U+FFF") {
			t.Errorf("ParseInput(%q): %v, want a problem of body naming the character", body, err)
		}
	}
	escaped := `{"note":"a\uffffb"}`
	if input, _, err := order.ParseInput([]byte(escaped), nil); err != nil || string(input) != escaped {
		t.Errorf("ParseInput(%s) = %s, %v; want it as sent", escaped, input, err)
	}
}

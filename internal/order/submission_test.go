package order_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"orderly/internal/order"
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

func TestParseSubmissionRejects(t *testing.T) {
	valid := line("ABC-1", 2)
	tests := []struct {
		name       string
		body       string
		wantFields []string
		// wantProblem is a fragment of the first field's problem.
		wantProblem string
	}{
		{"missing customerId", `{"lines":[` + valid + `]}`, []string{"customerId"}, "required"},
		{"blank customerId", submissionBody("  \t ", valid), []string{"customerId"}, "required"},
		{"customerId over limit", submissionBody(strings.Repeat("c", order.MaxCustomerIDLen+1), valid), []string{"customerId"}, "limit"},
		{"customerId with control character", submissionBody("cust\x01omer", valid), []string{"customerId"}, "control"},
		{"customerId with DEL", submissionBody("cust\x7f", valid), []string{"customerId"}, "control"},
		{"customerId with newline", submissionBody("cust\nomer", valid), []string{"customerId"}, "control"},
		{"missing lines", `{"customerId":"c-1"}`, []string{"lines"}, "at least one"},
		{"empty lines", submissionBody("c-1"), []string{"lines"}, "at least one"},
		{"101 lines", submissionBody("c-1", distinctLines(order.MaxLines+1)...), []string{"lines"}, "101"},
		{"duplicate SKU", submissionBody("c-1", line("A", 1), line("B", 1), line("A", 2)), []string{"lines[2].sku"}, "lines[0]"},
		{"SKU with space", submissionBody("c-1", line("A B", 1)), []string{"lines[0].sku"}, "letters"},
		{"SKU with slash", submissionBody("c-1", line("A/../B", 1)), []string{"lines[0].sku"}, "letters"},
		{"SKU starting with dash", submissionBody("c-1", line("-A", 1)), []string{"lines[0].sku"}, "letters"},
		{"SKU not ASCII", submissionBody("c-1", line("ÄPFEL", 1)), []string{"lines[0].sku"}, "letters"},
		{"SKU missing", submissionBody("c-1", `{"quantity":1}`), []string{"lines[0].sku"}, "required"},
		{"SKU over limit", submissionBody("c-1", line(strings.Repeat("S", order.MaxSKULen+1), 1)), []string{"lines[0].sku"}, "limit"},
		{"quantity 0", submissionBody("c-1", line("A", 0)), []string{"lines[0].quantity"}, "between 1 and"},
		{"quantity missing", submissionBody("c-1", `{"sku":"A"}`), []string{"lines[0].quantity"}, "between 1 and"},
		{"quantity -1", submissionBody("c-1", line("A", -1)), []string{"lines[0].quantity"}, "got -1"},
		{"quantity over max", submissionBody("c-1", line("A", order.MaxQuantity+1)), []string{"lines[0].quantity"}, "got 10001"},
		{"quantity 1.5", submissionBody("c-1", `{"sku":"A","quantity":1.5}`), []string{"body"}, "integer"},
		{"quantity as string", submissionBody("c-1", `{"sku":"A","quantity":"3"}`), []string{"body"}, "integer"},
		{"lines not an array", `{"customerId":"c-1","lines":{"sku":"A"}}`, []string{"body"}, "array"},
		{"unknown top-level field", `{"customerId":"c-1","lines":[` + valid + `],"discount":50}`, []string{"discount"}, "unknown field"},
		{"unknown line field", submissionBody("c-1", `{"sku":"A","quantity":1,"price":3}`), []string{"lines[0].price"}, "unknown field"},
		{"second object after the first", submissionBody("c-1", valid) + submissionBody("c-2", valid), []string{"body"}, "after"},
		{"garbage after the object", submissionBody("c-1", valid) + ` x`, []string{"body"}, "after"},
		{"empty body", ``, []string{"body"}, "empty"},
		{"whitespace body", " \n\t", []string{"body"}, "empty"},
		{"truncated JSON", `{"customerId":"c-1","lines":[`, []string{"body"}, "malformed"},
		{"not JSON", `customerId=c-1`, []string{"body"}, "malformed"},
		{"JSON array", `[1,2]`, []string{"body"}, "object"},
		{"null", `null`, []string{"customerId", "lines"}, "required"},
		{"notificationTarget over limit", `{"customerId":"c-1","lines":[` + valid + `],"notificationTarget":"` + strings.Repeat("n", order.MaxNotificationTarget+1) + `"}`, []string{"notificationTarget"}, "limit"},
		{
			name: "several problems at once",
			body: submissionBody("", line("A", 1), line("B", 1), line("bad sku!", 0), line("A", 10_001)),
			wantFields: []string{
				"customerId",
				"lines[2].sku", "lines[2].quantity",
				"lines[3].sku", "lines[3].quantity",
			},
			wantProblem: "required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := order.ParseSubmission([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseSubmission() = %+v, nil; want an error", got)
			}
			if !errors.Is(err, order.ErrInvalid) {
				t.Errorf("ParseSubmission() error %v: errors.Is(err, ErrInvalid) = false, want true", err)
			}
			if errors.Is(err, order.ErrTooLarge) {
				t.Errorf("ParseSubmission() error %v: errors.Is(err, ErrTooLarge) = true, want false", err)
			}
			if gotFields := fieldNames(err); !slices.Equal(gotFields, tt.wantFields) {
				t.Errorf("ParseSubmission() error fields = %q, want %q (error: %v)", gotFields, tt.wantFields, err)
			}
			var ve *order.ValidationError
			if errors.As(err, &ve) && len(ve.Fields) > 0 && !strings.Contains(ve.Fields[0].Problem, tt.wantProblem) {
				t.Errorf("ParseSubmission() first problem = %q, want it to mention %q", ve.Fields[0].Problem, tt.wantProblem)
			}
		})
	}
}

func TestParseSubmissionTooLarge(t *testing.T) {
	body := submissionBody(strings.Repeat("c", order.MaxBodyBytes), line("A", 1))
	_, err := order.ParseSubmission([]byte(body))
	if !errors.Is(err, order.ErrTooLarge) {
		t.Fatalf("ParseSubmission(%d-byte body) error = %v, want errors.Is ErrTooLarge", len(body), err)
	}
	if errors.Is(err, order.ErrInvalid) {
		t.Errorf("ParseSubmission(%d-byte body) error %v also matches ErrInvalid, want only ErrTooLarge", len(body), err)
	}
}

func TestParseSubmissionAccepts(t *testing.T) {
	// Exactly at the size limit is allowed: pad a valid order with
	// whitespace, which JSON ignores.
	atLimit := submissionBody("c-1", line("A", 1))
	atLimit += strings.Repeat(" ", order.MaxBodyBytes-len(atLimit))

	tests := []struct {
		name string
		body string
		want order.Submission
	}{
		{
			name: "one line",
			body: `{"customerId":"cust-42","lines":[{"sku":"ABC-1","quantity":2}]}`,
			want: order.Submission{CustomerID: "cust-42", Lines: []order.Line{{SKU: "ABC-1", Quantity: 2}}},
		},
		{
			name: "limits of every rule, pretty-printed, trailing newline",
			body: "{\n  \"customerId\": \"" + strings.Repeat("c", order.MaxCustomerIDLen) + "\",\n" +
				"  \"lines\": [\n    {\"sku\": \"a.b_c:d-9\", \"quantity\": 1},\n" +
				"    {\"sku\": \"" + strings.Repeat("S", order.MaxSKULen) + "\", \"quantity\": 10000}\n  ],\n" +
				"  \"notificationTarget\": \"arn:aws:sqs:eu-west-1:123456789012:progress\"\n}\n",
			want: order.Submission{
				CustomerID: strings.Repeat("c", order.MaxCustomerIDLen),
				Lines: []order.Line{
					{SKU: "a.b_c:d-9", Quantity: 1},
					{SKU: strings.Repeat("S", order.MaxSKULen), Quantity: order.MaxQuantity},
				},
				NotificationTarget: "arn:aws:sqs:eu-west-1:123456789012:progress",
			},
		},
		{
			name: "100 lines",
			body: submissionBody("c-1", distinctLines(order.MaxLines)...),
		},
		{
			name: "body exactly at the size limit",
			body: atLimit,
			want: order.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "A", Quantity: 1}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := order.ParseSubmission([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseSubmission() error = %v, want nil", err)
			}
			if tt.want.CustomerID == "" {
				if len(got.Lines) != order.MaxLines {
					t.Errorf("ParseSubmission() has %d lines, want %d", len(got.Lines), order.MaxLines)
				}
				return
			}
			if got.CustomerID != tt.want.CustomerID || got.NotificationTarget != tt.want.NotificationTarget ||
				!slices.Equal(got.Lines, tt.want.Lines) {
				t.Errorf("ParseSubmission() = %+v, want %+v", got, tt.want)
			}
		})
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

func TestSubmissionHash(t *testing.T) {
	parse := func(t *testing.T, body string) order.Submission {
		t.Helper()
		s, err := order.ParseSubmission([]byte(body))
		if err != nil {
			t.Fatalf("ParseSubmission(%s) error = %v", body, err)
		}
		return s
	}
	base := `{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`

	t.Run("same content, different formatting", func(t *testing.T) {
		want := parse(t, base).Hash()
		for _, body := range []string{
			"{\n  \"customerId\": \"c-1\",\n  \"lines\": [\n    {\"sku\": \"A\", \"quantity\": 1},\n    {\"sku\": \"B\", \"quantity\": 2}\n  ]\n}\n",
			`{"lines":[{"quantity":1,"sku":"A"},{"quantity":2,"sku":"B"}],"customerId":"c-1"}`,
			`  {"customerId" : "c-1" , "lines" : [ {"sku":"A","quantity":1} , {"sku":"B","quantity":2} ] }  `,
			`{"customerId":"\u0063-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`,
			`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}],"notificationTarget":""}`,
		} {
			if got := parse(t, body).Hash(); got != want {
				t.Errorf("Hash(%s) = %s, want %s (the hash of %s)", body, got, want, base)
			}
		}
	})

	t.Run("different content", func(t *testing.T) {
		baseHash := parse(t, base).Hash()
		for _, body := range []string{
			`{"customerId":"c-2","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`,
			`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":3}]}`,
			`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"C","quantity":2}]}`,
			`{"customerId":"c-1","lines":[{"sku":"A","quantity":1}]}`,
			`{"customerId":"c-1","lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}],"notificationTarget":"q"}`,
		} {
			if got := parse(t, body).Hash(); got == baseHash {
				t.Errorf("Hash(%s) = %s, the same as Hash(%s); want them to differ", body, got, base)
			}
		}
	})

	t.Run("shape", func(t *testing.T) {
		got := parse(t, base).Hash()
		if len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Errorf("Hash() = %q, want 64 lowercase hex digits", got)
		}
	})
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

// TestParseSubmissionIsStrict covers what a lenient JSON decoder lets
// through: every case must be rejected, naming the field or the body.
func TestParseSubmissionIsStrict(t *testing.T) {
	valid := line("ABC-1", 2)
	tests := []struct {
		name      string
		body      string
		wantField string
		// wantProblem is a fragment of that field's problem.
		wantProblem string
	}{
		{"duplicate key", `{"customerId":"a","customerId":"b","lines":[` + valid + `]}`, "customerId", "more than once"},
		{"duplicate key in a line", `{"customerId":"a","lines":[{"sku":"A","sku":"B","quantity":1}]}`, "lines[0].sku", "more than once"},
		{"field name in another case", `{"customerId":"a","CUSTOMERID":"b","lines":[` + valid + `]}`, "CUSTOMERID", "unknown field"},
		{"line field in another case", `{"customerId":"a","lines":[{"SKU":"A","quantity":1}]}`, "lines[0].SKU", "unknown field"},
		{"invalid UTF-8", "{\"customerId\":\"a\xff\",\"lines\":[" + valid + "]}", "body", "UTF-8"},
		{"lone surrogate", `{"customerId":"a\ud800b","lines":[` + valid + `]}`, "customerId", "U+FFFD"},
		{"noncharacter U+FFFE", submissionBody("a\ufffeb", valid), "customerId", "U+FFFE"},
		{"noncharacter U+FFFF", submissionBody("a\uffffb", valid), "customerId", "U+FFFF"},
		{"right-to-left override", submissionBody("abc\u202edef", valid), "customerId", "U+202E"},
		{"zero-width space", submissionBody("ab\u200bc", valid), "customerId", "U+200B"},
		{"NUL in notificationTarget", `{"customerId":"a","lines":[` + valid + `],"notificationTarget":"q\u0000x"}`, "notificationTarget", "U+0000"},
		{"newline in notificationTarget", `{"customerId":"a","lines":[` + valid + `],"notificationTarget":"q\nx"}`, "notificationTarget", "U+000A"},
		// The request model allows no null (schemathesis found it accepted).
		{"null notificationTarget", `{"customerId":"a","lines":[` + valid + `],"notificationTarget":null}`, "notificationTarget", "null"},
		{"null customerId", `{"customerId":null,"lines":[` + valid + `]}`, "customerId", "null"},
		{"null quantity", `{"customerId":"a","lines":[{"sku":"A","quantity":null}]}`, "lines[0].quantity", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := order.ParseSubmission([]byte(tt.body))
			if !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("ParseSubmission(%q) error = %v, want ErrInvalid", tt.body, err)
			}
			var ve *order.ValidationError
			errors.As(err, &ve)
			i := slices.IndexFunc(ve.Fields, func(f order.FieldError) bool { return f.Field == tt.wantField })
			if i < 0 || !strings.Contains(ve.Fields[i].Problem, tt.wantProblem) {
				t.Errorf("got problems %+v, want %s mentioning %q", ve.Fields, tt.wantField, tt.wantProblem)
			}
		})
	}
}

// Unicode letters are fine in names and targets; only the invisible and
// the broken are refused.
func TestParseSubmissionAcceptsUnicodeText(t *testing.T) {
	body := `{"customerId":"Zoë Ångström 東京","lines":[{"sku":"A-1","quantity":1}],"notificationTarget":"https://example.com/hooks/zoë"}`
	s, err := order.ParseSubmission([]byte(body))
	if err != nil || s.CustomerID != "Zoë Ångström 東京" {
		t.Fatalf("ParseSubmission() = %+v, %v; want it accepted", s, err)
	}
	// 128 characters is the limit, however many bytes they take.
	long := strings.Repeat("é", order.MaxCustomerIDLen)
	if _, err := order.ParseSubmission([]byte(submissionBody(long, line("A", 1)))); err != nil {
		t.Errorf("a customerId of %d two-byte characters: %v, want it accepted", order.MaxCustomerIDLen, err)
	}
}

// TestTextPatternMatchesTheFunction checks, character by character over
// the Basic Multilingual Plane, that API Gateway's pattern and the
// function's rule agree: one schema, two places.
func TestTextPatternMatchesTheFunction(t *testing.T) {
	// Go's regexp spells \uXXXX as \x{XXXX}.
	re := regexp.MustCompile(regexp.MustCompile(`\\u([0-9A-F]{4})`).ReplaceAllString(order.TextPattern(), `\x{$1}`))
	for r := rune(0); r <= 0xFFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue // surrogates are not characters in Go strings
		}
		s := "a" + string(r) + "b"
		if got, want := re.MatchString(s), !order.Unprocessable(r); got != want {
			t.Fatalf("U+%04X: pattern accepts %v, function accepts %v", r, got, want)
		}
	}
	if len(order.TextPattern()) > 2000 {
		t.Errorf("pattern is %d bytes; keep it readable", len(order.TextPattern()))
	}
}

package order

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits on a submission.
const (
	MaxBodyBytes          = 64 << 10
	MaxLines              = 100
	MaxQuantity           = 10_000
	MaxCustomerIDLen      = 128
	MaxSKULen             = 64
	MaxNotificationTarget = 2048
	MaxIdempotencyKeyLen  = 255
)

// SKUPattern is the shape of a SKU; API Gateway's request model uses it too.
const SKUPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]*$`

var skuPattern = regexp.MustCompile(SKUPattern)

// Submission is the body of POST /orders.
type Submission struct {
	CustomerID string `json:"customerId"`
	Lines      []Line `json:"lines"`
	// NotificationTarget names where progress reports should go; it is
	// stored now and used by a later feature.
	NotificationTarget string `json:"notificationTarget,omitempty"`
}

// FieldError names a field and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// ValidationError lists every problem found in a submission, so a client can
// fix them all at once.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Problem
	}
	return strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// ParseSubmission decodes and validates a POST /orders body strictly: it
// rejects invalid UTF-8, repeated keys, field names that are not exactly
// the schema's (case included), unknown fields, trailing data, bodies over
// MaxBodyBytes, unprocessable characters and any rule the fields break, and
// reports every problem at once.
func ParseSubmission(body []byte) (Submission, error) {
	if len(body) > MaxBodyBytes {
		return Submission{}, fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), MaxBodyBytes, ErrTooLarge)
	}
	if !utf8.Valid(body) {
		return Submission{}, &ValidationError{Fields: []FieldError{{Field: "body", Problem: "is not valid UTF-8"}}}
	}
	problems, err := checkShape(body, submissionShape)
	if err != nil {
		return Submission{}, &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	if len(problems) > 0 {
		return Submission{}, &ValidationError{Fields: problems}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var s Submission
	if err := dec.Decode(&s); err != nil {
		return Submission{}, &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Submission{}, &ValidationError{Fields: []FieldError{{Field: "body", Problem: "unexpected data after the JSON object"}}}
	}
	if err := s.Validate(); err != nil {
		return Submission{}, err
	}
	return s, nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("field %q must be %s, got %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF):
		return "empty body: expected a JSON object"
	default:
		return "malformed JSON: " + err.Error()
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct":
		return "an object"
	}
	return goKind
}

// Validate checks every rule and reports all broken ones.
func (s Submission) Validate() error {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	switch n := utf8.RuneCountInString(s.CustomerID); {
	case strings.TrimSpace(s.CustomerID) == "":
		add("customerId", "is required")
	case n > MaxCustomerIDLen:
		add("customerId", "is %d characters, the limit is %d", n, MaxCustomerIDLen)
	case textProblem(s.CustomerID) != "":
		add("customerId", "%s", textProblem(s.CustomerID))
	}
	switch {
	case len(s.Lines) == 0:
		add("lines", "at least one line item is required")
	case len(s.Lines) > MaxLines:
		add("lines", "has %d items, the limit is %d", len(s.Lines), MaxLines)
	default:
		seen := make(map[string]int, len(s.Lines))
		for i, l := range s.Lines {
			field := fmt.Sprintf("lines[%d]", i)
			switch {
			case l.SKU == "":
				add(field+".sku", "is required")
			case len(l.SKU) > MaxSKULen:
				add(field+".sku", "is %d characters, the limit is %d", len(l.SKU), MaxSKULen)
			case !skuPattern.MatchString(l.SKU):
				add(field+".sku", "must be letters, digits and . _ : - (got %q)", l.SKU)
			default:
				if j, dup := seen[l.SKU]; dup {
					add(field+".sku", "repeats lines[%d]; put the total quantity on one line", j)
				}
				seen[l.SKU] = i
			}
			if l.Quantity < 1 || l.Quantity > MaxQuantity {
				add(field+".quantity", "must be between 1 and %d, got %d", MaxQuantity, l.Quantity)
			}
		}
	}
	switch n := utf8.RuneCountInString(s.NotificationTarget); {
	case n > MaxNotificationTarget:
		add("notificationTarget", "is %d characters, the limit is %d", n, MaxNotificationTarget)
	case textProblem(s.NotificationTarget) != "":
		add("notificationTarget", "%s", textProblem(s.NotificationTarget))
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

// Hash fingerprints the submission's content (not its formatting), so the
// same order sent twice with one Idempotency-Key is recognised as a replay.
func (s Submission) Hash() string {
	canonical, _ := json.Marshal(s) // a struct of strings and ints cannot fail
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ValidateIdempotencyKey checks an Idempotency-Key header value.
func ValidateIdempotencyKey(key string) error {
	switch {
	case len(key) > MaxIdempotencyKeyLen:
		return &ValidationError{Fields: []FieldError{{Field: "Idempotency-Key", Problem: fmt.Sprintf("is %d characters, the limit is %d", len(key), MaxIdempotencyKeyLen)}}}
	case strings.TrimSpace(key) == "" || strings.IndexFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
		return &ValidationError{Fields: []FieldError{{Field: "Idempotency-Key", Problem: "must be printable ASCII without spaces"}}}
	}
	return nil
}

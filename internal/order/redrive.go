package order

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Actions of an operator's redrive.
const (
	// RedriveRetry runs the stuck record again: the failed workflow step,
	// or the stuck undo; from a stuck undo before anything was undone, it
	// runs the failed workflow step again instead ("retry forward").
	RedriveRetry = "retry"
	// RedriveCompensate undoes the order's work: it resumes a stuck undo,
	// or starts undoing from a workflow step in Error.
	RedriveCompensate = "compensate"
)

// Redrive is the optional body of POST /orders/{id}/redrive.
type Redrive struct {
	Action string `json:"action,omitempty"`
}

var redriveShape = &shape{fields: map[string]*shape{"action": nil}}

// ParseRedrive decodes a redrive body as strictly as a submission. An
// empty body is an empty Redrive: the order's own default action.
func ParseRedrive(body []byte) (Redrive, error) {
	var r Redrive
	if err := parseStrict(body, redriveShape, &r); err != nil {
		return r, err
	}
	switch r.Action {
	case "", RedriveRetry, RedriveCompensate:
		return r, nil
	}
	return r, &ValidationError{Fields: []FieldError{{Field: "action",
		Problem: fmt.Sprintf("must be %q or %q", RedriveRetry, RedriveCompensate)}}}
}

// ParseEmpty accepts the body of a request that takes none: empty, or an
// empty JSON object.
func ParseEmpty(body []byte) error {
	return parseStrict(body, &shape{fields: map[string]*shape{}}, &struct{}{})
}

// parseStrict decodes an optional small JSON object body into v, refusing
// what ParseSubmission refuses.
func parseStrict(body []byte, want *shape, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), MaxBodyBytes, ErrTooLarge)
	}
	if !utf8.Valid(body) {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: "is not valid UTF-8"}}}
	}
	problems, err := checkShape(body, want)
	if err != nil {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	if len(problems) > 0 {
		return &ValidationError{Fields: problems}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	if dec.More() {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: "unexpected data after the JSON object"}}}
	}
	return nil
}

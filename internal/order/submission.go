package order

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"orderly/internal/strictjson"
)

// Limits on a submission.
const (
	// MaxInputBytes is the most an order's input may be: the item keeps
	// it and every request to an agent carries it, so a workflow's size
	// bounds (package definition) add it up.
	MaxInputBytes        = 64 << 10
	MaxIdempotencyKeyLen = 255
)

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

// InputCheck reports every rule of a workflow's input schema a document
// breaks (package definition compiles them).
type InputCheck func(doc []byte) []FieldError

// ParseInput decodes and checks the body of a submission strictly: it
// refuses bodies over MaxInputBytes, invalid UTF-8, repeated keys, trailing
// data, anything but a JSON object, and every rule of check (the
// workflow's input schema), reporting every problem at once. The input is
// returned as sent, compacted, with the fingerprint of its content (see
// Order.RequestHash).
func ParseInput(body []byte, check InputCheck) (input json.RawMessage, hash string, err error) {
	return parseObject(body, check, ReservedInput)
}

// ParseEventData decodes and checks the body of an event strictly, as
// ParseInput does a submission's, but for names: an event's data is its
// step's result, and its schema is the only judge of its fields (see
// control.SendEvent). The data is returned compacted.
func ParseEventData(body []byte) (json.RawMessage, error) {
	data, _, err := parseObject(body, nil, nil)
	return data, err
}

// SameJSON reports whether a and b hold the same JSON value, however
// they are formatted or their keys ordered (numbers as written).
func SameJSON(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// parseObject is ParseInput's check of a JSON object body, refusing the
// reserved names.
func parseObject(body []byte, check InputCheck, reserved []string) (input json.RawMessage, hash string, err error) {
	if len(body) > MaxInputBytes {
		return nil, "", fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), MaxInputBytes, ErrTooLarge)
	}
	if !utf8.Valid(body) {
		return nil, "", &ValidationError{Fields: []FieldError{{Field: "body", Problem: "is not valid UTF-8"}}}
	}
	// The input's fields are the workflow's input schema's to judge
	// (check), and it may take nulls.
	problems, err := checkShape(body, nil, strictjson.Options{Repeated: requestRules.Repeated})
	if err != nil {
		return nil, "", err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, "", &ValidationError{Fields: []FieldError{{Field: "body", Problem: "must be a JSON object: " + describeJSONError(err)}}}
	}
	if fields == nil {
		return nil, "", &ValidationError{Fields: []FieldError{{Field: "body", Problem: "must be a JSON object, not null"}}}
	}
	// The body's and the view's own names are refused whatever the
	// workflow's schema allows (its additionalProperties, say).
	for _, name := range reserved {
		if _, taken := fields[name]; taken {
			problems = append(problems, FieldError{Field: name, Problem: "is a name orderly gives its own field; an order's input may not use it"})
		}
	}
	if check != nil {
		problems = append(problems, check(body)...)
	}
	// A queue message cannot carry U+FFFE or U+FFFF, and written as JSON
	// escapes they would take twice the bytes the body's limit counts.
	// A schema that names the field says so first.
	if i := bytes.IndexFunc(body, func(r rune) bool { return r == 0xFFFE || r == 0xFFFF }); i >= 0 && len(problems) == 0 {
		r, _ := utf8.DecodeRune(body[i:])
		problems = append(problems, FieldError{Field: "body", Problem: fmt.Sprintf(
			"holds the noncharacter %U at byte %d, which orderly's queues cannot carry; if it is meant, write it escaped (\\u%04x)", r, i, r)})
	}
	if len(problems) > 0 {
		return nil, "", &ValidationError{Fields: problems}
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, body) // decoded above
	// Map keys marshal sorted: the same content hashes the same however
	// it is formatted or ordered.
	canonical, _ := json.Marshal(fields)
	sum := sha256.Sum256(canonical)
	return compact.Bytes(), hex.EncodeToString(sum[:]), nil
}

// checkShape reads a request body strictly (package strictjson): its
// problems are FieldErrors, a field at the top of the body is "body", and
// a body that is not JSON is a ValidationError of its own.
func checkShape(body []byte, want *strictjson.Shape, opts strictjson.Options) ([]FieldError, error) {
	problems, err := strictjson.Check(body, want, opts)
	if err != nil {
		return nil, &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	out := make([]FieldError, len(problems))
	for i, p := range problems {
		out[i] = FieldError{Field: cmp.Or(p.Field, "body"), Problem: p.Rule}
	}
	return out, nil
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
	case errors.Is(err, strictjson.ErrTrailingData):
		return "unexpected data after the JSON object"
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

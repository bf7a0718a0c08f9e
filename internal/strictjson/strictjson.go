// Package strictjson reads JSON documents people write by hand or send to
// the API more strictly than encoding/json: a repeated key, a field the
// format does not have (names are case-sensitive), a value of the wrong
// kind and data after the document are problems, each named by its
// field's path ("lines[0].sku", "steps[2].undo.path"), all of them at once.
// The API's request bodies, workflow definitions and the services
// configuration are read by it, so they refuse the same mistakes alike.
package strictjson

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Kind is a JSON value's type, as problems name it.
type Kind int

// Kinds. Shapes name the scalar kinds they take; objects and arrays are
// shapes with fields or elements.
const (
	Any Kind = iota
	Object
	Array
	String
	Integer
	Number
	Bool
	Null
)

func (k Kind) String() string {
	return [...]string{"any value", "an object", "an array", "a string", "an integer", "a number", "true or false", "null"}[k]
}

// Shape is what a JSON value must be. A nil or zero Shape takes any
// value (a JSON Schema, say, which has rules of its own).
type Shape struct {
	// Fields makes the value an object with at most these fields, each of
	// its shape.
	Fields map[string]*Shape
	// Others makes the value an object and is the shape of the fields
	// Fields does not list; nil refuses them. A zero Shape leaves them to
	// the caller, who knows more (what an authentication's type takes).
	Others *Shape
	// Elem makes the value an array whose elements have this shape.
	Elem *Shape
	// Kind, for a scalar: String, Integer, Number (which takes integers
	// too) or Bool.
	Kind Kind
	// Unknown is the rule a field outside Fields breaks; empty, it is
	// "unknown field".
	Unknown string
}

// kind is the kind of value s takes; Any for a nil or zero Shape.
func (s *Shape) kind() Kind {
	switch {
	case s == nil:
		return Any
	case s.Fields != nil || s.Others != nil:
		return Object
	case s.Elem != nil:
		return Array
	}
	return s.Kind
}

// field returns the shape of an object's field, and the rule it breaks
// when the object does not take it.
func (s *Shape) field(key string) (*Shape, string) {
	if s.kind() != Object {
		return nil, ""
	}
	if f, ok := s.Fields[key]; ok {
		return f, ""
	}
	if s.Others != nil {
		return s.Others, ""
	}
	if s.Unknown != "" {
		return nil, s.Unknown
	}
	return nil, "unknown field"
}

// Options are how strict a format is beyond its shape, and how its
// problems are worded.
type Options struct {
	// Repeated is the rule a repeated key breaks; empty, it is
	// "repeated key; each key once".
	Repeated string
	// Null, when set, is the rule a null breaks anywhere below the
	// document's top, even where the shape takes any value: the API's
	// requests leave an optional field out instead.
	Null string
	// Integers names whole numbers "an integer" rather than "a number",
	// for formats that have integer fields.
	Integers bool
}

// Problem is one thing wrong with a document, Kubernetes-style: where the
// document came from (a file, "context services", an environment
// variable), the field's path in it and the rule broken. Check leaves
// Source to its caller.
type Problem struct {
	Source string
	Field  string
	Rule   string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Source + ": " + p.Rule
	}
	return p.Source + ": " + p.Field + ": " + p.Rule
}

// Problems is every problem found, a line each, so that all of them can
// be fixed at once.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// ErrTrailingData is a document with more after its value.
var ErrTrailingData = errors.New("data after the JSON value")

// SyntaxError is a document that is not JSON. Err is io.EOF for an empty
// document, io.ErrUnexpectedEOF for one that ends too early,
// ErrTrailingData, or the decoder's *json.SyntaxError.
type SyntaxError struct {
	// Field is the path of the value being read.
	Field string
	// Line is the line of a *json.SyntaxError, from 1; 0 for the others.
	Line int
	Err  error
}

// Error is the decoder's own words: the field and line are for the caller
// to word (see Describe).
func (e *SyntaxError) Error() string { return e.Err.Error() }

func (e *SyntaxError) Unwrap() error { return e.Err }

// Describe says what is wrong with a document that is not JSON, for a
// problem's rule: "ends too early", or the decoder's words and the line.
func Describe(err error) string {
	var se *SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "ends too early"
	case errors.As(err, &se) && se.Line > 0:
		return fmt.Sprintf("line %d: %s", se.Line, se.Err)
	}
	return err.Error()
}

// Check reads data, one JSON value, and reports every repeated key, every
// field want does not take and every value of another kind than want's
// (and, as opts say, every null). Below a value of the wrong kind nothing
// more is checked. A document that is not JSON, or has data after its
// value, is an error, a *SyntaxError.
func Check(data []byte, want *Shape, opts Options) ([]Problem, error) {
	c := &checker{dec: json.NewDecoder(bytes.NewReader(data)), data: data, opts: opts}
	c.dec.UseNumber()
	if err := c.walk("", want); err != nil {
		return nil, err
	}
	if _, err := c.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &SyntaxError{Err: ErrTrailingData}
	}
	return c.problems, nil
}

type checker struct {
	dec      *json.Decoder
	data     []byte
	opts     Options
	started  bool
	problems []Problem
}

func (c *checker) add(field, rule string) {
	c.problems = append(c.problems, Problem{Field: field, Rule: rule})
}

// token reads the next token of the value at path.
func (c *checker) token(path string) (json.Token, error) {
	tok, err := c.dec.Token()
	if err == nil {
		c.started = true
		return tok, nil
	}
	if errors.Is(err, io.EOF) && c.started {
		err = io.ErrUnexpectedEOF // cut off inside the document, not empty
	}
	se := &SyntaxError{Field: path, Err: err}
	var jse *json.SyntaxError
	if errors.As(err, &jse) {
		se.Line = 1 + bytes.Count(c.data[:min(int(jse.Offset), len(c.data))], []byte("\n"))
	}
	return nil, se
}

func (c *checker) walk(path string, s *Shape) error {
	tok, err := c.token(path)
	if err != nil {
		return err
	}
	got, want := kindOf(tok), s.kind()
	switch {
	case got == Null && path != "" && c.opts.Null != "":
		c.add(path, c.opts.Null)
		return nil
	case want != Any && got != want && (want != Number || got != Integer):
		if got == Integer && !c.opts.Integers {
			got = Number
		}
		c.add(path, "must be "+want.String()+", not "+got.String())
		s = nil // what is inside a value of the wrong kind is not the format's
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for c.dec.More() {
			keyTok, err := c.token(path)
			if err != nil {
				return err
			}
			key := keyTok.(string)
			field := key
			if path != "" {
				field = path + "." + key
			}
			next, unknown := s.field(key)
			switch {
			case seen[key]:
				c.add(field, cmp.Or(c.opts.Repeated, "repeated key; each key once"))
			case unknown != "":
				c.add(field, unknown)
			}
			seen[key] = true
			if err := c.walk(field, next); err != nil {
				return err
			}
		}
	case json.Delim('['):
		var elem *Shape
		if s.kind() == Array {
			elem = s.Elem
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.walk(fmt.Sprintf("%s[%d]", path, i), elem); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = c.token(path) // the closing '}' or ']'
	return err
}

// kindOf is the kind of value a token starts.
func kindOf(tok json.Token) Kind {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return Object
		}
		return Array
	case string:
		return String
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return Integer
		}
		return Number
	case bool:
		return Bool
	}
	return Null
}

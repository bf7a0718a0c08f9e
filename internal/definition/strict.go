package definition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// shape is the fields a JSON object may have, or an array's elements'
// shape; a nil shape takes any value (input, a JSON Schema of its own).
type shape struct {
	fields map[string]*shape
	elem   *shape
	// kind, for a scalar: "string" or "integer".
	kind string
}

var (
	integer   = &shape{kind: "integer"}
	scalar    = &shape{kind: "string"}
	callShape = &shape{fields: map[string]*shape{"method": scalar, "path": scalar}}
	carries   = &shape{elem: scalar}
	undoShape = &shape{fields: map[string]*shape{"method": scalar, "path": scalar, "description": scalar, "carries": carries}}
	stepShape = &shape{fields: map[string]*shape{"name": scalar, "service": scalar, "call": callShape, "undo": undoShape,
		"timing":  {fields: map[string]*shape{"allowance": scalar, "maxAllowance": scalar, "failureThreshold": integer, "maxHeartbeats": integer}},
		"request": {fields: map[string]*shape{"carries": carries}},
		"result":  {fields: map[string]*shape{"schema": nil, "maxBytes": integer}}}}
	definitionShape = &shape{fields: map[string]*shape{"$schema": scalar, "name": scalar, "version": scalar,
		"description": scalar, "input": nil, "steps": {elem: stepShape}}}
)

// checkStrict walks the document and reports every field the format does
// not have and every key repeated in one object (encoding/json would keep
// the last silently). A syntax error is returned as is.
func checkStrict(data []byte) ([]Problem, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var problems []Problem
	var walk func(path string, s *shape) error
	walk = func(path string, s *shape) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if got := kindOf(tok); s != nil && path != "" && got != want(s) {
			problems = append(problems, Problem{Field: path, Rule: "must be " + want(s) + ", not " + got})
			s = nil
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				keyTok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := keyTok.(string)
				field := key
				if path != "" {
					field = path + "." + key
				}
				if seen[key] {
					problems = append(problems, Problem{Field: field, Rule: "repeated key; each key once"})
				}
				seen[key] = true
				var next *shape
				if s != nil && s.fields != nil {
					n, known := s.fields[key]
					if !known {
						problems = append(problems, Problem{Field: field, Rule: "unknown field"})
					}
					next = n
				}
				if err := walk(field, next); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			var elem *shape
			if s != nil {
				elem = s.elem
			}
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), elem); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk("", definitionShape); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the definition's object")
	}
	return problems, nil
}

// kindOf names a token's JSON type, as the rules say it.
func kindOf(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "an integer"
		}
		return "a number"
	case bool:
		return "true or false"
	}
	return "null"
}

// want names the JSON type a shape takes.
func want(s *shape) string {
	switch {
	case s.fields != nil:
		return "an object"
	case s.elem != nil:
		return "an array"
	case s.kind == "integer":
		return "an integer"
	}
	return "a string"
}

// describeSyntax says where a syntax error is, by line.
func describeSyntax(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("line %d: %s", line, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "ends too early"
	}
	return err.Error()
}

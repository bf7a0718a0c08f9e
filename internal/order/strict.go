package order

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// shape is the structure a JSON document must have: an object's exact
// field names (nil for a scalar), or an array's element shape.
type shape struct {
	fields map[string]*shape
	elem   *shape
}

// checkShape reports every repeated key, every field name that is not
// the shape's, exactly as spelled, and every null. It returns a syntax error as is, for
// the caller to report as malformed JSON.
func checkShape(body []byte, want *shape) ([]FieldError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var problems []FieldError
	var walk func(path string, s *shape) error
	walk = func(path string, s *shape) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok == nil && path != "" && want != nil {
			// No field of a request model may be null: leave it out.
			problems = append(problems, FieldError{Field: path, Problem: "is null; leave an optional field out instead"})
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
				field := join(path, key)
				var next *shape
				switch {
				case seen[key]:
					problems = append(problems, FieldError{Field: field, Problem: "appears more than once"})
				case s != nil && s.fields != nil:
					var known bool
					if next, known = s.fields[key]; !known {
						problems = append(problems, FieldError{Field: field, Problem: "unknown field (names are case-sensitive)"})
					}
				}
				seen[key] = true
				if err := walk(field, next); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				var elem *shape
				if s != nil {
					elem = s.elem
				}
				if err := walk(fmt.Sprintf("%s[%d]", path, i), elem); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return err
		}
		return nil
	}
	if err := walk("", want); err != nil {
		if errors.Is(err, io.EOF) && dec.InputOffset() > 0 && len(bytes.TrimSpace(body)) > 0 {
			err = io.ErrUnexpectedEOF // cut off inside the document, not empty
		}
		return nil, err
	}
	return problems, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

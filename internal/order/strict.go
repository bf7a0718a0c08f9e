package order

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
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

// Unprocessable reports a character no text field may hold: controls
// (NUL and line breaks among them), format characters (invisible ones such
// as U+200B, and ones that reorder text such as U+202E), line and
// paragraph separators, surrogates, noncharacters such as U+FFFE and
// U+FFFF, and U+FFFD, which stands for text that was not valid to begin
// with (a lone surrogate escape decodes to it).
func Unprocessable(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Cs) ||
		r == utf8.RuneError || noncharacter(r)
}

// noncharacter reports U+FDD0 to U+FDEF and the last two code points of
// every plane.
func noncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

// textProblem describes the first unprocessable character of s, or "".
func textProblem(s string) string {
	for i, r := range []rune(s) {
		if Unprocessable(r) {
			return fmt.Sprintf("must not contain control, format or other invisible characters; U+%04X is character %d", r, i+1)
		}
	}
	return ""
}

// TextPattern is the JSON Schema pattern of a text field, for API
// Gateway's request model: no character Unprocessable refuses, written as
// \uXXXX ranges. A schema pattern sees UTF-16 code units, so it lists the
// Basic Multilingual Plane only and leaves surrogates alone (they make up
// every other plane's characters); what it cannot see there, a lone
// surrogate or a format character beyond U+FFFF, the function refuses.
func TextPattern() string {
	var b strings.Builder
	b.WriteString("^[^")
	for lo := rune(0); lo <= 0xFFFF; lo++ {
		if !unprocessableBMP(lo) {
			continue
		}
		hi := lo
		for hi+1 <= 0xFFFF && unprocessableBMP(hi+1) {
			hi++
		}
		fmt.Fprintf(&b, `\u%04X`, lo)
		if hi > lo {
			fmt.Fprintf(&b, `-\u%04X`, hi)
		}
		lo = hi
	}
	b.WriteString("]*$")
	return b.String()
}

func unprocessableBMP(r rune) bool {
	return Unprocessable(r) && !unicode.Is(unicode.Cs, r)
}

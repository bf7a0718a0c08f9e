package definition

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// NewCompiler returns a JSON Schema compiler (draft 2020-12 unless a
// schema says otherwise) whose patterns also take ECMA-262's \uXXXX
// escapes, as API Gateway's request models (and so the shipped input
// schema) use them and Go's regexp does not.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(func(s string) (jsonschema.Regexp, error) {
		return regexp.Compile(goEscapes(s))
	})
	return c
}

// goEscapes rewrites \uXXXX as \x{XXXX}.
func goEscapes(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '\\' || i+1 >= len(pattern) {
			b.WriteByte(c)
			continue
		}
		if pattern[i+1] == 'u' && i+6 <= len(pattern) && isHex(pattern[i+2:i+6]) {
			b.WriteString(`\x{` + pattern[i+2:i+6] + `}`)
			i += 5
			continue
		}
		b.WriteString(pattern[i : i+2])
		i++
	}
	return b.String()
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// inputURL is where a definition's input schema is compiled from.
const inputURL = "mem:///input.json"

// CompileInput compiles a definition's input schema.
func CompileInput(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := NewCompiler()
	if err := c.AddResource(inputURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(inputURL)
}

// checkInputSchema reports why raw is not a JSON Schema an order's
// submission can be checked with.
func checkInputSchema(raw []byte) error {
	if _, err := CompileInput(raw); err != nil {
		// The library's message spans lines; one line per problem.
		return errorLine(err)
	}
	return nil
}

type lineError string

func (e lineError) Error() string { return string(e) }

// errorLine is err on one line: for a schema the meta-schema refuses, only
// what is wrong where ("at /type: value must be one of ..."), not the
// chain of keywords that led there.
func errorLine(err error) error {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		var leaves []string
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(e.Causes) == 0 {
				leaves = append(leaves, "at /"+strings.Join(e.InstanceLocation, "/")+": "+e.ErrorKind.LocalizedString(printer))
			}
			for _, c := range e.Causes {
				walk(c)
			}
		}
		walk(ve)
		return lineError(strings.Join(leaves, "; "))
	}
	return lineError(strings.Join(strings.Fields(err.Error()), " "))
}

var printer = message.NewPrinter(language.English)

// Schema is a compiled JSON Schema: an input schema, or a step's result
// schema.
type Schema struct{ s *jsonschema.Schema }

// CompileSchema compiles a definition's schema (see NewCompiler).
func CompileSchema(raw []byte) (Schema, error) {
	s, err := CompileInput(raw)
	if err != nil {
		return Schema{}, errorLine(err)
	}
	return Schema{s}, nil
}

// FieldProblem is one rule a document breaks: the field's path
// ("lines[0].sku", empty for the document itself) and what is wrong.
type FieldProblem struct {
	Field   string
	Problem string
}

// Check reports every rule doc (JSON) breaks, each at its field; none
// when doc matches.
func (s Schema) Check(doc []byte) []FieldProblem {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []FieldProblem{{Problem: "is not JSON: " + err.Error()}}
	}
	err = s.s.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []FieldProblem{{Problem: err.Error()}}
	}
	var out []FieldProblem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, problemsAt(e.InstanceLocation, e.ErrorKind)...)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// problemsAt is one broken rule at an instance location. A missing
// property is a problem of that property, named as the field (address:
// is required), not of the object that lacks it: a client fixes the
// field the message names.
func problemsAt(loc []string, k jsonschema.ErrorKind) []FieldProblem {
	var missing []string
	var rule string
	switch k := k.(type) {
	case *kind.Required:
		missing, rule = k.Missing, "is required"
	case *kind.DependentRequired:
		missing, rule = k.Missing, fmt.Sprintf("is required when %q is given", k.Prop)
	case *kind.Dependency:
		missing, rule = k.Missing, fmt.Sprintf("is required when %q is given", k.Prop)
	default:
		return []FieldProblem{{Field: fieldPath(loc), Problem: describe(k)}}
	}
	out := make([]FieldProblem, len(missing))
	for i, name := range missing {
		out[i] = FieldProblem{Field: fieldPath(append(slices.Clone(loc), name)), Problem: rule}
	}
	return out
}

// fieldPath writes an instance location as the API names fields:
// lines[0].sku.
func fieldPath(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// describe words a broken rule. A value that misses its pattern is not
// quoted (it may be a card token) and neither is the pattern (it may be
// long): the first character that is not plainly printable, if any, is
// what such a pattern refuses most often.
func describe(k jsonschema.ErrorKind) string {
	if f, ok := k.(*kind.Format); ok {
		// The library's words quote the value.
		return "is not a valid " + f.Want
	}
	p, ok := k.(*kind.Pattern)
	if !ok {
		return k.LocalizedString(printer)
	}
	for _, r := range p.Got {
		if !unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return fmt.Sprintf("holds %U, which the field does not allow", r)
		}
	}
	return "does not have the form the field requires (its pattern in the workflow's input schema)"
}

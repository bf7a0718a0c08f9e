package strictjson_test

import (
	"errors"
	"io"
	"slices"
	"testing"

	"orderly/internal/strictjson"
)

var (
	str     = &strictjson.Shape{Kind: strictjson.String}
	integer = &strictjson.Shape{Kind: strictjson.Integer}
	boolean = &strictjson.Shape{Kind: strictjson.Bool}
	// line and submission are an API request's shape.
	line       = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"sku": str, "quantity": integer}}
	submission = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"customerId": str, "lines": {Elem: line}, "meta": nil}}
	// services is an object of any names, each an object whose fields
	// other than url are the caller's to judge.
	services = &strictjson.Shape{Others: &strictjson.Shape{Fields: map[string]*strictjson.Shape{"url": str, "on": boolean},
		Others: &strictjson.Shape{}}}
	// matrix is an array of arrays of integers.
	matrix = &strictjson.Shape{Elem: &strictjson.Shape{Elem: integer}}
)

// problems writes Check's problems a line each, "field: rule".
func problems(ps []strictjson.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field+": "+p.Rule)
	}
	return out
}

func TestCheckReportsEveryProblemWithItsPath(t *testing.T) {
	for _, tt := range []struct {
		name  string
		data  string
		shape *strictjson.Shape
		opts  strictjson.Options
		want  []string
	}{
		{"a valid document", `{"customerId":"c","lines":[{"sku":"A","quantity":1}],"meta":{"any":[null,1.5]}}`, submission, strictjson.Options{}, nil},
		{"a repeated key", `{"customerId":"a","customerId":"b"}`, submission, strictjson.Options{},
			[]string{"customerId: repeated key; each key once"}},
		{"a repeated key, worded by the caller", `{"lines":[{"sku":"A","sku":"B"}]}`, submission, strictjson.Options{Repeated: "appears more than once"},
			[]string{"lines[0].sku: appears more than once"}},
		{"a repeated unknown field is reported once unknown", `{"price":1,"price":2}`, submission, strictjson.Options{},
			[]string{"price: unknown field", "price: repeated key; each key once"}},
		{"a repeated key where any value goes", `{"meta":{"a":{"b":1,"b":2}}}`, submission, strictjson.Options{},
			[]string{"meta.a.b: repeated key; each key once"}},
		{"an unknown field", `{"customerId":"c","lines":[{"sku":"A","quantity":1,"price":3}]}`, submission, strictjson.Options{},
			[]string{"lines[0].price: unknown field"}},
		{"a field in another case", `{"customerId":"a","CustomerId":"b"}`, submission, strictjson.Options{},
			[]string{"CustomerId: unknown field"}},
		{"an unknown field, worded by the shape", `{"x":1}`, &strictjson.Shape{Fields: map[string]*strictjson.Shape{}, Unknown: "unknown field (names are case-sensitive)"},
			strictjson.Options{}, []string{"x: unknown field (names are case-sensitive)"}},
		{"wrong kinds", `{"customerId":5,"lines":{"sku":"A"}}`, submission, strictjson.Options{Integers: true},
			[]string{"customerId: must be a string, not an integer", "lines: must be an array, not an object"}},
		{"nothing is checked inside a value of the wrong kind", `{"lines":{"sku":"A","sku":"B","x":1}}`, submission, strictjson.Options{},
			[]string{"lines: must be an array, not an object", "lines.sku: repeated key; each key once"}},
		{"a fraction where an integer goes", `{"lines":[{"quantity":1.5},{"quantity":2}]}`, submission, strictjson.Options{},
			[]string{"lines[0].quantity: must be an integer, not a number"}},
		{"a whole number named a number, by default", `{"customerId":5}`, submission, strictjson.Options{},
			[]string{"customerId: must be a string, not a number"}},
		{"an integer where a number goes", `[1,2.5,"3"]`, &strictjson.Shape{Elem: &strictjson.Shape{Kind: strictjson.Number}}, strictjson.Options{},
			[]string{"[2]: must be a number, not a string"}},
		{"true or false", `{"a":{"url":"u","on":"yes"},"b":{"url":true}}`, services, strictjson.Options{},
			[]string{"a.on: must be true or false, not a string", "b.url: must be a string, not true or false"}},
		{"the top of the wrong kind", `[]`, submission, strictjson.Options{}, []string{": must be an object, not an array"}},
		{"a null where a kind goes", `{"customerId":null,"lines":[null]}`, submission, strictjson.Options{},
			[]string{"customerId: must be a string, not null", "lines[0]: must be an object, not null"}},
		{"a null where any value goes", `{"meta":null}`, submission, strictjson.Options{}, nil},
		{"nulls refused anywhere below the top", `{"meta":{"a":[null]},"customerId":null}`, submission, strictjson.Options{Null: "is null; leave it out"},
			[]string{"meta.a[0]: is null; leave it out", "customerId: is null; leave it out"}},
		{"a null top is the shape's to judge", `null`, nil, strictjson.Options{Null: "is null; leave it out"}, nil},
		{"nested arrays", `[[1,2],[3,"4"],5,[[6]]]`, matrix, strictjson.Options{Integers: true},
			[]string{"[1][1]: must be an integer, not a string", "[2]: must be an array, not an integer", "[3][0]: must be an integer, not an array"}},
		{"fields the caller judges", `{"a":{"url":"u","auth":{"type":"x","type":"y"}},"b":{"url":"v","anything":[1]}}`, services, strictjson.Options{},
			[]string{"a.auth.type: repeated key; each key once"}},
		{"any document for a nil shape", `{"a":[1,{"b":null}],"c":"d"}`, nil, strictjson.Options{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strictjson.Check([]byte(tt.data), tt.shape, tt.opts)
			if err != nil {
				t.Fatalf("Check(%s) error %v, want problems %q", tt.data, err, tt.want)
			}
			if !slices.Equal(problems(got), tt.want) {
				t.Errorf("Check(%s) = %q, want %q", tt.data, problems(got), tt.want)
			}
		})
	}
}

func TestCheckRefusesWhatIsNotOneJSONValue(t *testing.T) {
	for _, tt := range []struct {
		name      string
		data      string
		wantErr   error // what the error wraps
		wantField string
		wantRule  string // Describe's words
	}{
		{"empty", ``, io.EOF, "", "ends too early"},
		{"only white space", " \n\t", io.EOF, "", "ends too early"},
		{"cut off in an array", `{"customerId":"c","lines":[`, io.ErrUnexpectedEOF, "lines", "ends too early"},
		{"cut off after a key", `{"customerId"`, io.ErrUnexpectedEOF, "customerId", "ends too early"},
		{"cut off before a value", `{"lines":[{"sku":`, io.ErrUnexpectedEOF, "lines[0].sku", "ends too early"},
		{"cut off inside a literal", `{"customerId":tru`, io.ErrUnexpectedEOF, "customerId", "ends too early"},
		{"not JSON, on its line", "{\n\"customerId\":\n\"a\" \"b\"}", nil, "", `line 3: invalid character '"' after object key:value pair`},
		{"after a value", `{"lines":[{"quantity":1x}]}`, nil, "lines[0]", "line 1: invalid character 'x' after object key:value pair"},
		{"a second document", `{} {}`, strictjson.ErrTrailingData, "", "data after the JSON value"},
		{"garbage after the document", `{"customerId":"c"} x`, strictjson.ErrTrailingData, "", "data after the JSON value"},
		{"a stray closing bracket", `{}]`, strictjson.ErrTrailingData, "", "data after the JSON value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strictjson.Check([]byte(tt.data), submission, strictjson.Options{})
			var se *strictjson.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Check(%q) = %q, %v; want a *SyntaxError", tt.data, problems(got), err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Check(%q) error %v, want it to wrap %v", tt.data, err, tt.wantErr)
			}
			if se.Field != tt.wantField || strictjson.Describe(err) != tt.wantRule {
				t.Errorf("Check(%q): field %q, described %q; want %q, %q", tt.data, se.Field, strictjson.Describe(err), tt.wantField, tt.wantRule)
			}
		})
	}
}

func TestProblemsErrorIsALineEach(t *testing.T) {
	got := strictjson.Problems{
		{Source: "f.json", Rule: "is not valid JSON: ends too early"},
		{Source: "context services", Field: "payment.auth.secret", Rule: "is required"},
	}.Error()
	want := "f.json: is not valid JSON: ends too early\ncontext services: payment.auth.secret: is required"
	if got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

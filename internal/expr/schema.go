package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// shapeKind is what the checker knows of a value from its JSON Schema.
type shapeKind int

const (
	dynShape    shapeKind = iota // anything: unknown, several types, or a form not read here
	stringShape                  // "type": "string"
	intShape                     // "type": "integer"
	doubleShape                  // "type": "number"
	boolShape                    // "type": "boolean"
	listShape                    // "type": "array"
	objectShape                  // "type": "object" with properties and no additionalProperties
	mapShape                     // any other "type": "object"
)

// shape is one schema as the checker sees it, and how a JSON value of it
// becomes a CEL value.
type shape struct {
	kind   shapeKind
	items  *shape  // listShape
	object *object // objectShape
}

var dyn = &shape{kind: dynShape}

// object is a schema object with named properties: a CEL object type,
// so that the checker knows its fields and their types.
type object struct {
	name   string
	fields map[string]*shape
}

func (o *object) fieldNames() []string {
	names := make([]string, 0, len(o.fields))
	for n := range o.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// celType is the type the checker gives a value of this shape.
func (s *shape) celType() *types.Type {
	switch s.kind {
	case stringShape:
		return types.StringType
	case intShape:
		return types.IntType
	case doubleShape:
		return types.DoubleType
	case boolShape:
		return types.BoolType
	case listShape:
		return types.NewListType(s.items.celType())
	case objectShape:
		return types.NewObjectType(s.object.name)
	case mapShape:
		return types.NewMapType(types.StringType, types.DynType)
	default:
		return types.DynType
	}
}

// schemaReader turns JSON Schemas into shapes, naming each object type
// after where it is, written as CEL reads it with the keys quoted
// ("input", "input['lines'][]", "results['fraud-screen']"). The checker
// reads a.b.c as a type's name when a type has that name, so a dotted
// name like "results.reserve" would turn results.reserve into a type
// rather than a field; a name with brackets cannot be written that way.
type schemaReader struct {
	objects map[string]*object
}

// read reads one schema. A schema it cannot read as an object (true,
// false, or not JSON) is dyn: the definition's own validation says what
// is wrong with it, and the checker then checks nothing there.
func (r *schemaReader) read(name string, raw json.RawMessage) (*shape, error) {
	if len(raw) == 0 {
		return dyn, nil
	}
	var s struct {
		Type                 json.RawMessage            `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
		PatternProperties    json.RawMessage            `json:"patternProperties"`
		Items                json.RawMessage            `json:"items"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return dyn, nil // true or false: a schema, but no type
		}
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	var typ string
	if json.Unmarshal(s.Type, &typ) != nil {
		return dyn, nil // no type, or a list of types: the value may be any of them
	}
	switch typ {
	case "string":
		return &shape{kind: stringShape}, nil
	case "integer":
		return &shape{kind: intShape}, nil
	case "number":
		return &shape{kind: doubleShape}, nil
	case "boolean":
		return &shape{kind: boolShape}, nil
	case "array":
		items, err := r.read(name+"[]", s.Items)
		if err != nil {
			return nil, err
		}
		return &shape{kind: listShape, items: items}, nil
	case "object":
		// Properties beyond the named ones make the names no longer a
		// closed list, so nothing can be checked by name.
		if len(s.Properties) == 0 || allowsMore(s.AdditionalProperties) || len(s.PatternProperties) > 0 {
			return &shape{kind: mapShape}, nil
		}
		o := &object{name: r.uniqueName(name), fields: make(map[string]*shape, len(s.Properties))}
		r.objects[o.name] = o
		for prop, sub := range s.Properties {
			f, err := r.read(key(o.name, prop), sub)
			if err != nil {
				return nil, err
			}
			o.fields[prop] = f
		}
		return &shape{kind: objectShape, object: o}, nil
	default:
		return dyn, nil
	}
}

// key names the value at name[prop].
func key(name, prop string) string {
	return name + "['" + strings.ReplaceAll(prop, "'", `\'`) + "']"
}

// allowsMore says whether additionalProperties admits properties beyond
// the named ones: anything but absent or false does.
func allowsMore(raw json.RawMessage) bool {
	v := strings.TrimSpace(string(raw))
	return v != "" && v != "false"
}

// uniqueName keeps type names apart should two paths be written alike
// (a property named "a']['b" beside a property b of a).
func (r *schemaReader) uniqueName(name string) string {
	if _, taken := r.objects[name]; !taken {
		return name
	}
	for i := 2; ; i++ {
		n := name + "#" + strconv.Itoa(i)
		if _, taken := r.objects[n]; !taken {
			return n
		}
	}
}

// provider tells the checker the fields of the schema objects and leaves
// every other type to CEL's own registry. At evaluation the values of
// these types are Go maps (see convert), which CEL reads by key: the
// fields carry no GetFrom, so the interpreter selects them as map keys.
type provider struct {
	base    types.Provider
	objects map[string]*object

	// misses records, per field name, the object types a selection of
	// it failed on, so that a compile error can say which fields there
	// are. Env.Compile holds Env.mu while it is in use.
	mu     sync.Mutex
	misses map[string][]string
}

var _ types.Provider = (*provider)(nil)

func (p *provider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p *provider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.base.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if o, ok := p.objects[name]; ok {
		return o.fieldNames(), true
	}
	return p.base.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	o, ok := p.objects[name]
	if !ok {
		return p.base.FindStructFieldType(name, field)
	}
	f, ok := o.fields[field]
	if !ok {
		p.mu.Lock()
		if !slices.Contains(p.misses[field], name) {
			p.misses[field] = append(p.misses[field], name)
		}
		p.mu.Unlock()
		return nil, false
	}
	return &types.FieldType{Type: f.celType()}, true
}

// NewValue refuses to build a schema object: Compile rejects object
// literals before this could be reached, and a map is what the
// interpreter expects for these types.
func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.objects[name]; ok {
		return types.NewErr("cannot build a value of %s", name)
	}
	return p.base.NewValue(name, fields)
}

// takeMisses returns and forgets the recorded misses.
func (p *provider) takeMisses() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.misses
	p.misses = map[string][]string{}
	return m
}

// decode reads a JSON document as a value of the shape.
func decode(raw json.RawMessage, s *shape) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return convert(v, s), nil
}

// convert makes a decoded JSON value (numbers as json.Number) the value
// CEL gets: a number is an int where the schema says integer and it is
// one, a double otherwise (CEL's reading of JSON). A value that does not
// fit its schema is converted as dyn, and an expression that relies on
// the schema's type there fails at evaluation ("no such overload").
func convert(v any, s *shape) any {
	switch v := v.(type) {
	case json.Number:
		if s.kind == intShape {
			if i, ok := jsonInt(v); ok {
				return i
			}
		}
		// The decoder checked the syntax; a number beyond float64's
		// range reads as an infinity of its sign.
		f, _ := v.Float64()
		return f
	case []any:
		items := dyn
		if s.kind == listShape {
			items = s.items
		}
		for i, e := range v {
			v[i] = convert(e, items)
		}
		return v
	case map[string]any:
		for k, e := range v {
			f := dyn
			if s.kind == objectShape {
				if fs, ok := s.object.fields[k]; ok {
					f = fs
				}
			}
			v[k] = convert(e, f)
		}
		return v
	default:
		return v // string, bool, nil
	}
}

// jsonInt reads an integral JSON number (2, 2.0, 2e3) that fits an int64.
func jsonInt(n json.Number) (int64, bool) {
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `{"type":"struct","fields":[
		{"name":"id","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}},
		{"name":"amount","type":"decimal(10,2)","nullable":true,"metadata":{}},
		{"name":"gone","type":"void","nullable":true,"metadata":{}},
		{"name":"v","type":"variant","nullable":true,"metadata":{}},
		{"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}},
		{"name":"attrs","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"ts","type":"timestamp_ntz","nullable":true,"metadata":{}}]},"valueContainsNull":true},"nullable":true,"metadata":{}}
	]}`
	st, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "struct<id:long,amount:decimal(10,2),gone:void,v:variant,tags:array<string>,attrs:map<string,struct<ts:timestamp_ntz>>>"
	if st.String() != want {
		t.Errorf("String() = %s\nwant %s", st, want)
	}
	if id, ok := st.Fields[0].FieldID(); !ok || id != 1 || st.Fields[0].PhysicalName("name") != "col-1" || st.Fields[0].PhysicalName("none") != "id" {
		t.Errorf("column mapping metadata: id %d %v, physical %q", id, ok, st.Fields[0].PhysicalName("name"))
	}
	if st.Fields[0].Nullable || !st.Fields[1].Nullable {
		t.Error("nullable flags")
	}
	if at := st.Field("tags").Type.(*ArrayType); at.ContainsNull {
		t.Error("containsNull false was lost")
	}
	// round trip through Marshal
	s, err := Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("round trip changed the schema:\n%s", s)
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":         `{"type":`,
		"top-level array":  `{"type":"array","elementType":"string","containsNull":true}`,
		"unknown type":     `{"type":"struct","fields":[{"name":"a","type":"interval","nullable":true,"metadata":{}}]}`,
		"unknown complex":  `{"type":"struct","fields":[{"name":"a","type":{"type":"udt"},"nullable":true,"metadata":{}}]}`,
		"decimal too wide": `{"type":"struct","fields":[{"name":"a","type":"decimal(39,2)","nullable":true,"metadata":{}}]}`,
		"missing type":     `{"type":"struct","fields":[{"name":"a","nullable":true,"metadata":{}}]}`,
		"empty":            ``,
		"duplicate field":  `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"a","type":"string","nullable":true,"metadata":{}}]}`,
		"duplicate nested": `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`,
	} {
		if _, err := Parse(in); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%s: err = %v, want ErrInvalidSchema", name, err)
		}
	}
	_, err := Parse(`{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[` +
		`{"name":"x","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`)
	if err == nil || !strings.Contains(err.Error(), `duplicate field "s.x"`) {
		t.Errorf("duplicate nested field: err = %v, want it to name s.x", err)
	}
}

func TestWalkFields(t *testing.T) {
	inner := NewStruct(NewField("x", Primitive(Long), true))
	root := NewStruct(
		NewField("a", Primitive(Integer), true),
		NewField("s", inner, true),
		NewField("arr", &ArrayType{ElementType: NewStruct(NewField("e", Primitive(String), true)), ContainsNull: true}, true),
		NewField("m", &MapType{KeyType: NewStruct(NewField("k", Primitive(String), true)),
			ValueType: NewStruct(NewField("v", Primitive(Double), true)), ValueContainsNull: true}, true),
	)
	var got []string
	WalkFields(root, func(f *StructField) { got = append(got, f.Name) })
	want := []string{"a", "s", "x", "arr", "e", "m", "k", "v"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WalkFields visited %v, want %v", got, want)
	}
	WalkFields(Primitive(Long), func(f *StructField) { t.Errorf("visited %s in a primitive", f.Name) })
}

// TestParseTypeErrorsNameJSON: a schemaString whose JSON has a wrong kind
// somewhere is refused naming the JSON field and kinds, not Go types.
func TestParseTypeErrorsNameJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"struct","fields":5}`, `invalid Delta schema: at "": field fields is a JSON number, want an array`},
		{`{"type":"struct","fields":[{"name":1,"type":"long"}]}`, `invalid Delta schema: at "": field fields.name is a JSON number, want a string`},
		{`{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}`, `field fields.nullable is a JSON string, want a boolean`},
		{`{"type":5}`, `field type is a JSON number, want a string`},
	} {
		_, err := Parse(tc.in)
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("Parse(%s) = %v, want ErrInvalidSchema saying %q without Go types", tc.in, err, tc.want)
		}
	}
}

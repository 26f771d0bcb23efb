package specs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleUnknownFields refuses a config.json with fields the runtime-spec
// types do not know. bulkhead cannot police what it cannot read, and
// rewriting the spec would drop the field, silently changing what the
// caller asked for. In audit mode the decision is recorded and the
// caller's bytes, unknown fields included, reach the backend unchanged,
// as the runtime-spec asks of a runtime ("MUST NOT generate an error if
// they encounter an unknown property").
func ruleUnknownFields(c *Context, s *rspec.Spec) []Decision {
	data := c.Original
	if data == nil && c.Bundle != "" {
		data, _ = os.ReadFile(filepath.Join(c.Bundle, "config.json"))
	}
	if data == nil {
		return nil
	}
	fields, err := UnknownFields(data)
	if err != nil {
		return []Decision{{Rule: "unknown_fields", Field: "config.json", Action: Refused, Layer: LayerNone,
			Why: "the document cannot be read member by member (" + err.Error() + "), so it cannot be told free of fields no rule polices; write it as plain JSON"}}
	}
	var ds []Decision
	if len(fields) > maxNamedMembers {
		ds = append(ds, Decision{Rule: "unknown_fields", Field: "config.json", Action: Refused, Layer: LayerNone,
			Before: strconv.Itoa(len(fields)) + " members", Why: "more members no rule can police than are named here; remove them"})
		fields = fields[:maxNamedMembers]
	}
	for _, f := range fields {
		ds = append(ds, Decision{Rule: "unknown_fields", Field: f, Action: Refused, Layer: LayerNone,
			Why: "the runtime-spec types bulkhead checks do not know this field by this name, or the object holds it twice, so no rule can police it as written and a rewrite would drop it; write each field once, spelt as the runtime-spec does, or use a profile in audit mode"})
	}
	return ds
}

// UnknownFields lists, as JSON paths, the members of a config.json that
// the runtime-spec types do not define under that very name, and those
// an object holds twice. encoding/json matches a name in any case and
// keeps the last of two, so a reader of the file would see one value
// ("args") and the backend run another ("ARGS" after it): one spelling,
// once. A document that cannot be read member by member is an error: it
// cannot be told free of them.
func UnknownFields(data []byte) ([]string, error) {
	return unknownMembers(data, reflect.TypeOf(rspec.Spec{}))
}

// unknownMembers is UnknownFields for a document of type t.
func unknownMembers(data []byte, t reflect.Type) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay text: the typed decode skips an unknown member without
	// converting it, so a number no float64 holds (1e400) must not make
	// this reading fail where that one succeeds.
	dec.UseNumber()
	var out []string
	if err := walkMembers(dec, t, "", &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// walkMembers reads one value from dec as type t (nil: any shape) and
// adds to out the path of each member t does not define by its exact
// name, and of each member an object repeats.
func walkMembers(dec *json.Decoder, t reflect.Type, path string, out *[]string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			var elem reflect.Type
			child := path + "[" + key + "]"
			switch {
			case fields != nil:
				child = strings.TrimPrefix(path+"."+key, ".")
				ft, ok := fields[key]
				if !ok {
					*out = append(*out, child)
				}
				elem = ft
			case t != nil && t.Kind() == reflect.Map:
				elem = t.Elem()
			}
			if seen[key] {
				*out = append(*out, child+" (twice)")
			}
			seen[key] = true
			if err := walkMembers(dec, elem, child, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkMembers(dec, elem, path+"["+strconv.Itoa(i)+"]", out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// jsonFields maps each JSON member name of struct t to its type, as
// encoding/json names them (tags, embedded structs).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					m[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}

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
	for _, f := range fields {
		ds = append(ds, Decision{Rule: "unknown_fields", Field: f, Action: Refused, Layer: LayerNone,
			Why: "the runtime-spec types bulkhead checks do not know this field, so no rule can police it and a rewrite would drop it; remove it or use a profile in audit mode"})
	}
	return ds
}

// UnknownFields lists, as JSON paths, the members of a config.json that
// the runtime-spec types do not define. A document that cannot be read
// member by member is an error: it cannot be told free of them.
func UnknownFields(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay text: the typed decode skips an unknown member without
	// converting it, so a number no float64 holds (1e400) must not make
	// this reading fail where that one succeeds.
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var out []string
	unknownIn(v, reflect.TypeOf(rspec.Spec{}), "", &out)
	sort.Strings(out)
	return out, nil
}

func unknownIn(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch val := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range val {
				unknownIn(e, t.Elem(), path+"["+k+"]", out)
			}
		case reflect.Struct:
			fields := jsonFields(t)
			for k, e := range val {
				ft, ok := fields[strings.ToLower(k)]
				if !ok {
					*out = append(*out, strings.TrimPrefix(path+"."+k, "."))
					continue
				}
				unknownIn(e, ft, path+"."+k, out)
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range val {
				unknownIn(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", out)
			}
		}
	}
}

// jsonFields maps each JSON member name of struct t, lower-cased, to its
// type, the way encoding/json matches them (tags, embedded structs, case
// folding).
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
		m[strings.ToLower(name)] = f.Type
	}
	return m
}

package specs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

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
	w := memberWalk{dec: dec}
	if err := w.value(t); err != nil {
		return nil, err
	}
	sort.Strings(w.out)
	return w.out, nil
}

// maxJSONDepth bounds how deeply a document nests: the runtime-spec's
// deepest path (linux.seccomp.syscalls[].args[].value) is six levels,
// and a deeper document is no spec; walking one must not cost its depth
// squared.
const maxJSONDepth = 32

// memberWalk reads one JSON value and lists the path of each member its
// type does not define by its exact name, and of each member an object
// repeats. The path is kept as its parts and joined only for a member it
// names, so the walk holds one copy of it however deep it goes.
type memberWalk struct {
	dec   *json.Decoder
	parts []string
	out   []string
}

func (w *memberWalk) report(suffix string) {
	w.out = append(w.out, strings.TrimPrefix(strings.Join(w.parts, ""), ".")+suffix)
}

// value reads one value as type t (nil: any shape).
func (w *memberWalk) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	if len(w.parts) >= maxJSONDepth {
		return fmt.Errorf("nested deeper than %d levels, which no runtime-spec document is", maxJSONDepth)
	}
	if tok == json.Delim('[') {
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			w.parts = append(w.parts, "["+strconv.Itoa(i)+"]")
			err := w.value(elem)
			w.parts = w.parts[:len(w.parts)-1]
			if err != nil {
				return err
			}
		}
		_, err = w.dec.Token()
		return err
	}
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = knownFields(t)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		k, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		var elem reflect.Type
		part := "[" + key + "]"
		switch {
		case fields != nil:
			part = "." + key
			elem = fields[key]
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		w.parts = append(w.parts, part)
		if fields != nil && elem == nil {
			w.report("")
		}
		if seen[key] {
			w.report(" (twice)")
		}
		seen[key] = true
		err = w.value(elem)
		w.parts = w.parts[:len(w.parts)-1]
		if err != nil {
			return err
		}
	}
	_, err = w.dec.Token()
	return err
}

// fieldsByType holds jsonFields of each struct type met: the spec's types
// are fixed, and every verb reads a document through them.
var fieldsByType sync.Map

// knownFields is jsonFields(t), built once per type.
func knownFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldsByType.LoadOrStore(t, jsonFields(t))
	return m.(map[string]reflect.Type)
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

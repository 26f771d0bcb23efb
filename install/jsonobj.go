package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// object is a JSON object that keeps its keys in the order of the file, so
// that editing one key of daemon.json leaves every other key, its value and
// its position as they were.
type object struct {
	keys   []string
	values map[string]json.RawMessage
}

// parseObject reads one JSON object. Values stay raw: bulkhead never
// reinterprets keys it does not own. Duplicate keys are refused, since
// dockerd would take one of them and an edit could silently pick the other.
func parseObject(data []byte) (*object, error) {
	o := &object{values: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return o, nil
	}
	// JSON is UTF-8; the decoder would quietly replace invalid bytes in a
	// key, and writing the file back would change keys bulkhead never
	// touched.
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		if _, dup := o.values[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		o.keys = append(o.keys, key)
		o.values[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the object")
	}
	return o, nil
}

func (o *object) has(key string) bool {
	_, ok := o.values[key]
	return ok
}

func (o *object) get(key string) json.RawMessage { return o.values[key] }

// set replaces a key's value in place, or appends the key at the end.
func (o *object) set(key string, v json.RawMessage) {
	if !o.has(key) {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
}

func (o *object) remove(key string) {
	if !o.has(key) {
		return
	}
	delete(o.values, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) empty() bool { return len(o.keys) == 0 }

// marshal renders the object compactly, keys in order; indent formats it.
func (o *object) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalString(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		var c bytes.Buffer
		if err := json.Compact(&c, o.values[k]); err != nil {
			return nil, fmt.Errorf("value of %q: %w", k, err)
		}
		b.Write(c.Bytes())
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// render is the object as a file: indented with the unit the original file
// used (two spaces when it had none) and ending in a newline.
func (o *object) render(indent string) ([]byte, error) {
	compact, err := o.marshal()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", indent); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// indentOf guesses the indentation unit of a JSON file: the leading
// whitespace of its first indented line.
func indentOf(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}

// sameJSON tells whether two documents hold the same objects, keys in the
// same order, ignoring whitespace.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// marshalString quotes s as JSON without escaping <, > and &: a key such
// as "a&b" must come back byte for byte, not as "a\u0026b".
func marshalString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Decode parses a config.json strictly: a field the runtime-spec types do
// not know is an error naming it.
func Decode(data []byte) (*rspec.Spec, error) {
	return decode(data, true)
}

// DecodeLenient parses a config.json and ignores fields the runtime-spec
// types do not know. Apply's unknown_fields rule refuses them by name, so
// that audit mode can still hand such a spec over unchanged.
func DecodeLenient(data []byte) (*rspec.Spec, error) {
	return decode(data, false)
}

func decode(data []byte, strict bool) (*rspec.Spec, error) {
	var s rspec.Spec
	if err := decodeOne(bytes.NewReader(data), &s, strict); err != nil {
		return nil, fmt.Errorf("config.json: %w", jsonProblem(data, err))
	}
	return &s, nil
}

// jsonProblem says where in data a decoding error is, as a person finds
// it: the line and column of a syntax error, the runtime-spec field and
// the JSON type of a value of the wrong type, the end of a document cut
// short.
func jsonProblem(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		// The offset is past the byte that broke the syntax.
		line, col := lineColumn(data, syntax.Offset-1)
		return fmt.Errorf("not valid JSON at line %d, column %d: %w", line, col, err)
	case errors.As(err, &typ) && typ.Field != "":
		line, col := lineColumn(data, typ.Offset)
		return fmt.Errorf("%s: a JSON %s where the runtime-spec has %s (line %d, column %d)", typ.Field, typ.Value, typ.Type, line, col)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineColumn(data, int64(len(data)))
		return fmt.Errorf("the JSON ends before its document does (line %d, column %d): is the file cut short?", line, col)
	}
	return err
}

// lineColumn is the 1-based line and column of byte offset off in data.
func lineColumn(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// maxNamedMembers bounds the members a refusal names.
const maxNamedMembers = 64

// DecodeStrict decodes the one JSON document r holds into v: a member
// v's type does not define under that very name, or one an object holds
// twice, is an error naming it (UnknownFields), since bulkhead cannot
// police what it does not read and handing v on would drop it, and so is
// anything after the document.
func DecodeStrict(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	unknown, err := unknownMembers(data, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	if len(unknown) > maxNamedMembers {
		unknown = append(unknown[:maxNamedMembers:maxNamedMembers], fmt.Sprintf("and %d more", len(unknown)-maxNamedMembers))
	}
	if len(unknown) > 0 {
		return fmt.Errorf("members no runtime-spec type defines by that name, or given twice: %s; write each once, spelt as the runtime-spec does", strings.Join(unknown, ", "))
	}
	return decodeOne(bytes.NewReader(data), v, true)
}

func decodeOne(r io.Reader, v any, strict bool) error {
	dec := json.NewDecoder(r)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// Load reads and decodes the config.json of a bundle. Unknown fields are
// left to the unknown_fields rule (see DecodeLenient).
func Load(bundle string) (*rspec.Spec, []byte, error) {
	return LoadAt(bundle, bundle)
}

// LoadAt is Load reading config.json from dir, a path that reaches the
// bundle (such as its opened descriptor's), and naming bundle in errors.
func LoadAt(bundle, dir string) (*rspec.Spec, []byte, error) {
	path := filepath.Join(dir, "config.json")
	data, err := readRegular(path, filepath.Join(bundle, "config.json"), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("bundle %s has no config.json: pass the bundle's directory with --bundle (runc spec writes one)", bundle)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	s, err := DecodeLenient(data)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	return s, data, nil
}

// Marshal is the JSON form bulkhead shows a person (check's diff).
func Marshal(s *rspec.Spec) ([]byte, error) {
	return json.MarshalIndent(s, "", "\t")
}

// MarshalHanded is the JSON form bulkhead hands to a backend and digests
// for the audit log: compact, since only programs read it, and indenting
// a spec with the policy's seccomp profile in it cost about 0.3 ms of
// every create.
func MarshalHanded(s *rspec.Spec) ([]byte, error) {
	return json.Marshal(s)
}

// WriteAtomic replaces path with data through a temp file in the same
// directory and a rename, so a reader never sees half a file, and syncs
// it first, so that the file survives a crash of the host.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return writeReplacing(path, data, perm, true)
}

// WriteVolatile is WriteAtomic without the sync, for state that a reboot
// makes meaningless anyway: what bulkhead keeps of a running container
// (its record), whose processes do not survive the host either. A reader
// still never sees half a file; the sync was a millisecond of each create
// spent on a promise nobody could use. runc keeps its own state.json the
// same way.
func WriteVolatile(path string, data []byte, perm os.FileMode) error {
	return writeReplacing(path, data, perm, false)
}

func writeReplacing(path string, data []byte, perm os.FileMode, sync bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bulkhead-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Clone deep-copies a spec through JSON, which the spec types round-trip.
func Clone(s *rspec.Spec) *rspec.Spec {
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("spec does not marshal: %v", err))
	}
	var out rspec.Spec
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("spec does not round-trip: %v", err))
	}
	return &out
}

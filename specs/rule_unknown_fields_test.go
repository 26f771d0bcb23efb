package specs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestUnknownFields(t *testing.T) {
	tests := []struct {
		json string
		want []string
	}{
		{`{"ociVersion":"1.0.2","process":{"cwd":"/","args":["sh"]},"root":{"path":"rootfs"}}`, nil},
		{`{"ociVersion":"1.0.2","unknown":1}`, []string{"unknown"}},
		// One spelling, once: encoding/json would take "Process" for
		// "process" and keep the last of two "args".
		{`{"Process":{"CWD":"/"}}`, []string{"Process"}},
		{`{"process":{"args":["true"],"ARGS":["id"]}}`, []string{"process.ARGS"}},
		{`{"process":{"args":["true"],"args":["id"]},"annotations":{"a":"1","a":"2"}}`, []string{"annotations[a] (twice)", "process.args (twice)"}},
		{`{"process":{"user":{"uid":0,"umask":18,"shell":"/bin/sh"}}}`, []string{"process.user.shell"}},
		{`{"mounts":[{"destination":"/x","type":"bind","source":"/y"},{"destination":"/z","propagation":"shared"}]}`, []string{"mounts[1].propagation"}},
		{`{"linux":{"sysctl":{"anything.goes":"1"},"resources":{"memory":{"limit":1,"kmemTCP2":3}}}}`, []string{"linux.resources.memory.kmemTCP2"}},
		{`{"annotations":{"x":"y"},"hooks":{"prestart":[{"path":"/bin/true","when":"always"}]}}`, []string{"hooks.prestart[0].when"}},
		// A number no float64 holds, which the typed decode never converts.
		{`{"linux":{"fooUnknown":{"hooks":[1],"n":1e400}},"process":{"user":{"uid":1e400}}}`, []string{"linux.fooUnknown"}},
	}
	for _, tc := range tests {
		if got, err := UnknownFields([]byte(tc.json)); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v (%v), want %v", tc.json, got, err, tc.want)
		}
	}
	if got, err := UnknownFields([]byte(`not json`)); err == nil {
		t.Errorf("not json: got %v and no error", got)
	}
}

// TestUnknownFieldsRefused: Load accepts what the types do not know, and
// Apply refuses it by name, from the bytes in the Context or the bundle.
func TestUnknownFieldsRefused(t *testing.T) {
	dir := t.TempDir()
	data := []byte(`{"ociVersion":"1.0.2","process":{"cwd":"/","args":["true"],"user":{"uid":0,"gid":0}},"root":{"path":"rootfs"},"unknown":{"a":1,"n":1e400}}`)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data); err == nil {
		t.Fatal("strict Decode accepted an unknown field")
	}
	s, _, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, c := range []*Context{{Profile: testProfile(), Bundle: dir}, {Profile: testProfile(), Original: data}} {
		_, ds, err := Apply(c, s)
		if err == nil || !strings.Contains(err.Error(), "refuses unknown") || !strings.Contains(err.Error(), "rule unknown_fields") {
			t.Fatalf("Apply: %v", err)
		}
		if ds[0].Rule != "unknown_fields" || ds[0].Field != "unknown" || ds[0].Action != Refused {
			t.Fatalf("first decision %+v", ds[0])
		}
	}
}

// TestUnknownFieldsDeep: a document nested deeper than any spec is an
// error, found without holding a path per level: 2,000 levels of
// 500-character keys held a GiB when each level built its own.
func TestUnknownFieldsDeep(t *testing.T) {
	key := strings.Repeat("k", 500)
	doc := strings.Repeat(`{"`+key+`":`, 2000) + "1" + strings.Repeat("}", 2000)
	if _, err := UnknownFields([]byte(doc)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("a document 2,000 levels deep: %v, want an error", err)
	}
	ok := `{"linux":{"seccomp":{"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ"}]}]}}}`
	if got, err := UnknownFields([]byte(ok)); err != nil || len(got) != 0 {
		t.Errorf("the spec's deepest path: %v (%v)", got, err)
	}
}

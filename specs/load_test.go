package specs

import (
	"strings"
	"testing"
)

// TestDecodeSaysWhere: a config.json that does not decode is named with
// where a person finds the problem: line and column, the runtime-spec
// field of a value of the wrong type, a document cut short.
func TestDecodeSaysWhere(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"syntax", "{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {,}\n}", []string{"line 3, column 15"}},
		{"type", "{\n  \"process\": {\"args\": \"sh\"}\n}", []string{"process.args: a JSON string where the runtime-spec has []string", "line 2"}},
		{"truncated", "{\n  \"process\": {\"args\": [\"sh\"", []string{"ends before its document does", "line 2"}},
	} {
		_, err := DecodeLenient([]byte(tc.data))
		if err == nil {
			t.Fatalf("%s: decoded", tc.name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", tc.name, err, w)
			}
		}
	}
}

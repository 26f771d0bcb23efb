package runtime

import (
	"bytes"
	"encoding/json"
	"io"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// writeShownJSON writes v as one JSON document (indented by indent, if
// any) whose text shows as it is (escape.JSON): the bundle paths, fields
// and values a caller or a job chose come as JSON escapes to a reader,
// and as the very text to a parser.
func writeShownJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escape.JSON(buf.Bytes()))
	return err
}

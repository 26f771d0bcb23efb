package backend

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// LogSize is where the backend's lines in the --log file will start.
func LogSize(path string) int64 {
	if path == "" {
		return 0
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// LastError returns the last error message the backend wrote to the
// --log file from offset on: the engine shows only the last error line of
// that file, which is bulkhead's, so bulkhead's line must carry the
// backend's reason (runc's "error setting rlimit type 6: operation not
// permitted") rather than hide it. "" when there is none.
func LastError(path string, offset int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	var last string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil {
			if entry.Level == "error" || entry.Level == "fatal" {
				last = entry.Msg
			}
			continue
		}
		// Text format: level=error msg="…".
		if strings.Contains(line, "level=error") || strings.Contains(line, "level=fatal") {
			last = line
			if _, msg, ok := strings.Cut(line, "msg="); ok {
				last = strings.Trim(msg, `"`)
			}
		}
	}
	return strings.TrimPrefix(last, "bulkhead: ")
}

package runtime

import (
	"os"
	"testing"
)

// The caller's environment is not the backend's: what runc, the dynamic
// loader or libcontainer would act on is gone, what bulkhead reads stays.
func TestScrubEnvironment(t *testing.T) {
	gone := []string{"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "LD_PRELOAD", "_LIBCONTAINER_INITPIPE", "GODEBUG", "XDG_RUNTIME_DIR", "SOMETHING_NO_RULE_NAMES"}
	for _, k := range gone {
		t.Setenv(k, "1")
	}
	t.Setenv("BULKHEAD_CONFIG", "/etc/bulkhead/x.toml")
	t.Setenv("PATH", "/usr/sbin:/usr/bin")
	ScrubEnvironment()
	for _, k := range gone {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%s kept", k, v)
		}
	}
	if os.Getenv("BULKHEAD_CONFIG") != "/etc/bulkhead/x.toml" || os.Getenv("PATH") != "/usr/sbin:/usr/bin" {
		t.Errorf("BULKHEAD_CONFIG %q, PATH %q: want them kept", os.Getenv("BULKHEAD_CONFIG"), os.Getenv("PATH"))
	}
}

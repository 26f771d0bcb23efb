package main

import (
	"os"
	"sort"
	"strings"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// secretMarkers are substrings of variable names that usually hold
// credentials. The check reports names only, never values.
var secretMarkers = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "_KEY", "API_KEY", "ACCESS_KEY", "CREDENTIAL", "AWS_", "SSH_AUTH_SOCK"}

// notSecret are names a marker matches that hold no secret.
var notSecret = map[string]bool{"AWS_REGION": true, "AWS_DEFAULT_REGION": true}

// secretName reports whether an environment variable name looks like a
// credential.
func secretName(name string) bool {
	up := strings.ToUpper(name)
	if notSecret[up] {
		return false
	}
	for _, m := range secretMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	return false
}

// checkEnvironment: nothing of the caller's credentials reached the
// sandbox, the worker. bulkhead removes such variables before the
// container starts; this is what arrived.
func checkEnvironment(env *probeEnv) Result {
	r := Result{Attempt: "scan environment variable names for credentials", Layer: protocol.LayerEnvironment}
	var found []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if secretName(name) {
			found = append(found, name)
		}
	}
	sort.Strings(found)
	r.Pass = len(found) == 0
	if r.Pass {
		r.Observed = "none"
	} else {
		r.Observed = strings.Join(found, ",")
		r.Detail = "names only; values not shown"
	}
	return r
}

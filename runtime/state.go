package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// State prints the backend's state of a container with the caller's
// bundle in it: the backend was given bulkhead's own copy (runtime/pins.go),
// whose path means nothing to an engine. Every other field is the
// backend's, and a container bulkhead has no record of gets the backend's
// answer as it is.
func State(g *Globals, v Values, args []string, out io.Writer) error {
	if len(args) != 1 {
		return Passthrough(g, "state", v, args)
	}
	id := args[0]
	b, _, rec, err := owner(g, id)
	if err != nil {
		return err
	}
	if rec == nil {
		return Passthrough(g, "state", v, args)
	}
	data, err := backend.Output(g.backendArgv(b, "state", id))
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &BackendError{Verb: "state", Status: ee.ExitCode()}
		}
		return err
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(data, &state); err != nil {
		return fmt.Errorf("state of %s from backend %s: %w", id, b.Name, err)
	}
	bundle, _ := json.Marshal(rec.Bundle)
	state["bundle"] = bundle
	// runc prints the state indented; keep its keys (sorted by the
	// encoder) and its layout. The bundle path and annotations are the
	// caller's text, shown escaped (writeShownJSON).
	return writeShownJSON(out, state, "  ")
}

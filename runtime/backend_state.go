package runtime

import (
	"encoding/json"
	"errors"
	"fmt"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// backendReport is what the backend's `state` says of a container.
type backendReport struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
}

// errNoBackendState is the backend's failing to answer `state`: it has no
// container under the id, or cannot say. An answer that is not state's
// JSON is another error, so that no caller takes garbage for "gone".
var errNoBackendState = errors.New("the backend reports no state")

// askBackendState asks b for id's state.
func askBackendState(g *Globals, b *backend.Backend, id string) (backendReport, error) {
	var r backendReport
	out, err := backend.Output(g.backendArgv(b, "state", id))
	if err != nil {
		return r, fmt.Errorf("%w: %w", errNoBackendState, err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("state of %s from backend %s: %w", id, b.Name, err)
	}
	return r, nil
}

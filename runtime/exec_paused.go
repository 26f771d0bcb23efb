package runtime

import "errors"

// errIgnorePaused refuses an exec into a paused container. runc starts
// its init there, which the freezer stops half-way through its set-up:
// bulkhead cannot read it, the backend's exec times out, and the process
// would run unverified once the container is resumed.
var errIgnorePaused = errors.New("exec --ignore-paused refused: a process started in a paused container stays frozen " +
	"before bulkhead can verify it, and would run unverified on resume; resume the container, then exec")

// Package backend owns what bulkhead knows about the OCI runtimes it hands
// containers to: which kind a configured backend is (runc, runsc, crun),
// how a backend runs as bulkhead's child (timeouts, exit status, its last
// --log error), and how a spec is translated for runsc's way of enforcing
// it (host pids.max, RLIMIT_NPROC, seccomp actions and names).
//
// It knows nothing of policy, state or verbs: those import it.
package backend

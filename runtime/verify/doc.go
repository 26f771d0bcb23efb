// Package verify reads what the kernel applied to a container from the
// host (/proc/PID/status, the network namespace, mountinfo, the cgroup
// files, runsc's own command line) and compares it with the Expectation
// derived from the profile and the spec handed over. A mismatch is a
// failed Check: the caller fails closed on it.
//
// It imports runtime/backend (how runsc's limits look on the host) and
// nothing else of runtime.
package verify

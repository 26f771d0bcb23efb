// Package probe owns the host's side of `bulkhead probe`: the careless
// bundle the static probe runs in, reading its lines while sampling the
// container's cgroup counters, and judging each control from what the
// kernel answered inside and what the host saw. Running the container is
// the probe verb's, in runtime.
package probe

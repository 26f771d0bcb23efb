// Package doctor judges whether a host can hold the boundary, one Check
// per line: a backend (found, runs, version, runc's known escapes from the
// embedded runc_cves.toml, judged against the distribution's changelog),
// the kernel features and cgroup controllers, the directories bulkhead
// keeps state, audit and changes in, and the engines' registrations.
//
// The doctor verb in runtime loads the configuration and runs the live
// check, which creates a container through bulkhead itself.
package doctor

// Package watchdog enforces a container's max_lifetime from outside the
// sandbox: a detached process that waits for the container to start, arms
// the deadline, and kills every process of the container through the
// backend when it passes, recording the kill in the audit log.
//
// Which container, backend and command lines it uses are given to it by
// the watchdog verb in runtime.
package watchdog

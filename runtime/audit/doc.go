// Package audit owns the audit log: one JSON line per create, exec,
// update, delete and deadline, written whole under a flock so lines of
// parallel containers never interleave. Secret values never reach it: a
// removed variable is recorded by name.
package audit

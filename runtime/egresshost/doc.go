// Package egresshost is the root side of the egress broker on the host:
// the broker's listener, made in the container's network namespace (or a
// unix socket for runsc), the connection to that socket, the drop to the
// broker's user, and what the root broker hands the unprivileged one. It
// holds no HTTP: the broker that parses the job's requests is package
// egress, in a program of its own (bulkhead-egress-broker), so that the
// runtime every engine calls for every container carries none of it.
package egresshost

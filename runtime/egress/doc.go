// Package egress is the egress broker: an HTTP proxy that bulkhead runs
// beside a container whose profile lists egress destinations, outside the
// container's cgroup and namespaces. It allows CONNECT and plain HTTP to
// the listed names and ports only, resolves names itself on the host,
// refuses addresses inside the host's reach (loopback, link-local, private,
// the host's own) unless the operator listed the address, and writes one
// audit line per connection.
//
// The broker listens on a TCP socket inside the container's own network
// namespace (egresshost.ListenIn) rather than on a unix socket. Every HTTP client
// takes a proxy as http://host:port and none takes a socket path; a unix
// socket would have to be bound into the rootfs (a host socket crossing the
// boundary, which the host mounts rule refuses for good reason) and
// forwarded to a TCP port by a process inside the sandbox, which the job
// could kill, stop or replace. A listening socket in the namespace is no
// file in the container, needs no process inside it and keeps the
// namespace as it is: loopback only, no interface, no route, no DNS
// server. The broker itself dials from the host's namespace.
package egress

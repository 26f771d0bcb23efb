// Package runtime is bulkhead's OCI runtime: the runc verbs and bulkhead's
// own, and the plan they act on. MakePlan (plan.go) decides, without side
// effects, what create will do with a bundle: profile and backend, the
// rules' decisions, the spec handed over, the workspaces, the pins and the
// lifetime; its steps are the plan_*.go files. create carries the plan
// out (pins.go, the workspaces, the backend) and verifies it; check
// reports it.
//
// The layout has one rule: imports go down. runtime imports its
// sub-packages, each of which owns one concern and never imports runtime:
//
//	runtime/backend    backend kinds, the child process, the runsc translation
//	runtime/state      the registry of containers, state directories, pods
//	runtime/audit      the audit log
//	runtime/verify     what the kernel applied, read from the host
//	runtime/probe      the boundary probe's bundle, output and verdict
//	runtime/probe/protocol  the probe's line format and layer names, shared
//	                   with cmd/bulkhead-probe
//	runtime/watchdog   max_lifetime, enforced from outside the sandbox
//	runtime/detach     starting the processes that stay beside a container
//	runtime/egress     the egress broker, an HTTP proxy outside the sandbox
//	runtime/workspace  copy-on-write workspaces and their changes
//	runtime/doctor     the host checks of bulkhead doctor, runc's known escapes
//
// Below them all are specs (the rules), seccomp and cgroups, which import
// nothing of runtime. TestLayoutImportsGoDown holds the rule.
package runtime

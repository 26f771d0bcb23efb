// Command containerd-shim-bulkhead-v2 is containerd's runc shim with
// bulkhead as its OCI runtime: containerd runs it for
// `runtime_type = "io.containerd.bulkhead.v2"` (a CRI runtime handler, a
// Kubernetes RuntimeClass) and for `ctr run --runtime io.containerd.bulkhead.v2`.
//
// It reuses containerd's runc task service and manager unchanged (library:
// github.com/containerd/containerd/v2 v2.2.x) and overrides only what differs:
//
//   - the runtime binary: CRI sends runtime types other than
//     io.containerd.runc.v2 a generic options message (or none), and
//     containerd 1.6 ignores runtime_path, so no BinaryName reaches the shim
//     from its configuration. The shim finds bulkhead itself (see binary.go)
//     and puts it into every create request, replacing whatever options the
//     caller sent: a container of this runtime type never runs under plain
//     runc.
//   - the bootstrap answer of `start`: containerd 1.7+ and 2.x read a JSON
//     object {"version":3,"address":...,"protocol":"ttrpc"}; containerd 1.6
//     reads the plain socket address (see manager.go).
package main

import (
	"context"
	"os"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	"github.com/containerd/containerd/v2/pkg/shim"
)

func main() {
	name := runtimeName(os.Args[0])
	shim.Run(context.Background(), &bulkheadManager{
		Manager: manager.NewShimManager("io.containerd." + name + ".v2"),
		name:    name,
	})
}

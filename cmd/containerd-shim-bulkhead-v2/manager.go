package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/api/types"
	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/process"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/shim"
	runcC "github.com/containerd/go-runc"
	"github.com/containerd/log"
	"github.com/containerd/typeurl/v2"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// maxVersionEnv is set by containerd 1.7 and 2.x when they start a shim;
// containerd 1.6 sets only TTRPC_ADDRESS (and no GRPC_ADDRESS).
const maxVersionEnv = "MAX_SHIM_VERSION"

// bulkheadManager is the runc shim manager; Start and Info differ.
type bulkheadManager struct {
	shim.Manager
	name string // runtime binary name, bulkhead or bulkhead-runsc
}

// Start judges the client's runc options and resolves the runtime binary
// first (no shim starts when either fails: fail closed), hands it to the shim it spawns through the
// environment (replacing any value containerd's environment had), and
// answers in the form the calling containerd reads.
func (m *bulkheadManager) Start(ctx context.Context, id string, opts shim.StartOpts) (shim.BootstrapParams, error) {
	if err := shimCgroupRefusal(os.Stdin); err != nil {
		return shim.BootstrapParams{}, err
	}
	// Judged and refused or empty of what the manager reads in them.
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return shim.BootstrapParams{}, err
	}
	os.Stdin = devNull
	bin, err := findRuntime(m.name)
	if err != nil {
		return shim.BootstrapParams{}, err
	}
	if err := os.Setenv(binaryEnv, bin); err != nil {
		return shim.BootstrapParams{}, err
	}
	if err := groupRefusal("config.json"); err != nil {
		return shim.BootstrapParams{}, err
	}
	opts.Address = runtimeKeyedAddress(opts.Address, m.name)
	params, err := m.Manager.Start(ctx, id, opts)
	if err != nil || !legacyCaller() {
		return params, err
	}
	// containerd 1.6 reads the whole of stdout as the socket address
	// (runtime/v2/binary.go: strings.TrimSpace(out)); shim.Run would print
	// the JSON bootstrap object, which 1.6 fails to dial. containerd 2.x
	// accepts the plain form too (parseStartResponse falls back to it), but
	// then treats the shim as version 2 and loses the sandbox API, so the
	// JSON form stays for callers that announce MAX_SHIM_VERSION.
	//
	// 1.6 also reconnects to running shims after its own restart through
	// the bundle's address file (runtime/v2/shim.go loadShim), which its
	// shims wrote and newer ones do not: write it, in start's working
	// directory, the bundle.
	if err := writeAddress("address", params.Address); err != nil {
		return params, fmt.Errorf("write the bundle's address file for containerd 1.6: %w", err)
	}
	if _, err := os.Stdout.WriteString(params.Address); err != nil {
		return params, err
	}
	os.Exit(0)
	return params, nil
}

// shimCgroupRefusal judges the runc options containerd hands `start` on
// stdin, the only thing runc's manager reads in them: ShimCgroup, a
// cgroup it moves the shim into, as root, before the shim serves anything.
// It is the client's word (a container's runtime options), and a client
// put the shim into another tenant's container cgroup, whose pids limit
// then starved that tenant's job. The shim stays in containerd's cgroup.
func shimCgroupRefusal(stdin io.Reader) error {
	opts, err := shim.ReadRuntimeOptions[*options.Options](stdin)
	if err != nil || opts.ShimCgroup == "" {
		return nil
	}
	return fmt.Errorf("bulkhead: runc option ShimCgroup %q is refused: the shim, root on the host, would join whatever cgroup a client names, another tenant's; remove the option (the shim stays in containerd's cgroup)", opts.ShimCgroup)
}

// The annotations runc's shim manager reads, in this order, for the group
// whose shim serves a container: runc's own, then CRI's sandbox id.
const (
	runcGroupAnnotation  = "io.containerd.runc.v2.group"
	criSandboxAnnotation = "io.kubernetes.cri.sandbox-id"
)

// groupRefusal refuses a bundle (start's working directory) whose spec
// names a runc shim group: runc's manager would have the container served
// by whichever shim of the namespace listens under the group the client
// named, before any rule sees the container, and bulkhead's create
// refuses the annotation anyway. CRI groups a pod by its sandbox id, which
// runtimeKeyedAddress keeps within bulkhead's runtime, the namespace and
// the containerd only if it is one path component: the manager joins the
// address, the namespace and the group as a path before hashing them, and
// a client's ../../containerd.sock/<ns>/<id> named a plain runc task's
// shim (of any namespace, of any containerd on the host), which ran the
// client's job as root with no seccomp and its binary:// stream on the
// host. A sandbox id must be a containerd identifier, as CRI's are.
func groupRefusal(config string) error {
	data, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	var spec struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("bulkhead: %s: %w", config, err)
	}
	if g, ok := spec.Annotations[runcGroupAnnotation]; ok {
		return fmt.Errorf("bulkhead: annotation %s=%q is refused: it has the container served by whichever shim of its namespace listens under that group, before bulkhead judges it; remove it (a pod's containers share its shim by their sandbox id)", runcGroupAnnotation, g)
	}
	if g, ok := spec.Annotations[criSandboxAnnotation]; ok {
		if err := identifiers.Validate(g); err != nil {
			return fmt.Errorf("bulkhead: annotation %s=%q is refused: the shim serving the container is found by it as a path, which must not lead out of this runtime's, namespace's and containerd's shims: %w; give the pod sandbox's id", criSandboxAnnotation, g, err)
		}
	}
	return nil
}

// runtimeKeyedAddress is containerd's address as runc's manager is given
// it to key a shim's socket: the manager hashes it with the namespace and
// the group (the container's id, or the sandbox id of a pod's container)
// and serves the container from a shim already listening there. Keyed by
// bulkhead's runtime too, a container asked for under bulkhead is never
// served by a shim of another runtime, plain runc's (which ran a client's
// job as root with runc's capabilities) or bulkhead's other backend's.
// The shim gets it only as its -address flag, which it hashes again to
// remove its socket on exit and which none of its plugins dials.
func runtimeKeyedAddress(address, runtime string) string {
	return address + "#" + runtime
}

// Stop is containerd's clean-up of a task whose shim is gone (the shim
// binary's `delete`, run in the bundle). runc's reads the runtime binary
// and the state root from the runtime and options.json files its create
// writes into the bundle, and without them deletes the id with plain runc
// in /run/containerd/runc/<namespace>: a create refused before them (a
// Root option of another containerd) had a client of any containerd
// delete the host's containerd's container of that namespace and id.
// bulkhead's always asks bulkhead, in the task's containerd's own root.
func (m *bulkheadManager) Stop(ctx context.Context, id string) (shim.StopStatus, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return shim.StopStatus{}, err
	}
	bundle := filepath.Join(filepath.Dir(cwd), id)
	ns, err := namespaces.NamespaceRequired(ctx)
	if err != nil {
		return shim.StopStatus{}, err
	}
	root, err := runtimeRoot(bundle)
	if err != nil {
		return shim.StopStatus{}, err
	}
	bin, err := findRuntime(m.name)
	if err != nil {
		return shim.StopStatus{}, err
	}
	r := process.NewRunc(root, bundle, ns, bin, false)
	if err := r.Delete(ctx, id, &runcC.DeleteOpts{Force: true}); err != nil {
		log.G(ctx).WithError(err).Warn("failed to remove the container")
	}
	if err := mount.UnmountRecursive(filepath.Join(bundle, "rootfs"), 0); err != nil {
		log.G(ctx).WithError(err).Warn("failed to clean up the rootfs mount")
	}
	pid, err := runcC.ReadPidFile(filepath.Join(bundle, process.InitPidFile))
	if err != nil {
		log.G(ctx).WithError(err).Warn("failed to read the init pid file")
	}
	return shim.StopStatus{ExitedAt: time.Now(), ExitStatus: 128 + int(unix.SIGKILL), Pid: pid}, nil
}

// legacyCaller reports whether the containerd that runs `start` predates
// the JSON bootstrap protocol (1.6 and older).
func legacyCaller() bool {
	return os.Getenv(maxVersionEnv) == "" && os.Getenv("GRPC_ADDRESS") == ""
}

// Info reports bulkhead's features (`bulkhead features`), with runc options
// naming bulkhead in place of whatever options came on stdin.
func (m *bulkheadManager) Info(ctx context.Context, optionsR io.Reader) (*types.RuntimeInfo, error) {
	bin, err := findRuntime(m.name)
	if err != nil {
		return nil, err
	}
	opts := &options.Options{}
	if data, err := io.ReadAll(optionsR); err == nil && len(data) > 0 {
		// Another options type (CRI's generic one) is replaced.
		if in, err := shim.ReadRuntimeOptions[*options.Options](bytes.NewReader(data)); err == nil {
			opts = in
		}
	}
	opts.BinaryName = bin
	anyOpts, err := typeurl.MarshalAnyToProto(opts)
	if err != nil {
		return nil, err
	}
	data, err := proto.Marshal(anyOpts)
	if err != nil {
		return nil, fmt.Errorf("marshal runc options: %w", err)
	}
	return m.Manager.Info(ctx, bytes.NewReader(data))
}

// writeAddress replaces path with address atomically, as containerd 1.6's
// shim.WriteAddress did.
func writeAddress(path, address string) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(address), 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

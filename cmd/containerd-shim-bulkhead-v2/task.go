package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	taskv2 "github.com/containerd/containerd/api/runtime/task/v2"
	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task"
	"github.com/containerd/containerd/v2/pkg/shim"
	"github.com/containerd/containerd/v2/pkg/shutdown"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"
	"github.com/containerd/ttrpc"
	"github.com/containerd/typeurl/v2"
	sdutil "github.com/coreos/go-systemd/v22/util"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The task plugin of containerd's runc shim, registered here with the
// service wrapped (importing cmd/containerd-shim-runc-v2/task/plugin would
// register the unwrapped one under the same ID).
func init() {
	registry.Register(&plugin.Registration{
		Type:     plugins.TTRPCPlugin,
		ID:       "task",
		Requires: []plugin.Type{plugins.EventPlugin, plugins.InternalPlugin},
		InitFn: func(ic *plugin.InitContext) (interface{}, error) {
			pp, err := ic.GetByID(plugins.EventPlugin, "publisher")
			if err != nil {
				return nil, err
			}
			ss, err := ic.GetByID(plugins.InternalPlugin, "shutdown")
			if err != nil {
				return nil, err
			}
			bin, err := runtimeFromEnv()
			if err != nil {
				return nil, err
			}
			inner, err := task.NewTaskService(ic.Context, pp.(shim.Publisher), ss.(shutdown.Service))
			if err != nil {
				return nil, err
			}
			return &service{TTRPCTaskService: inner, binary: bin, streams: map[procKey]*judgedStreams{}}, nil
		},
	})
}

// service is the runc task service with bulkhead as every container's
// runtime binary, and the client's inputs judged before it acts on them.
type service struct {
	taskAPI.TTRPCTaskService
	binary string

	mu sync.Mutex
	// streams are each process's stdio as judged, by container and exec
	// id (empty for the init): what the task service opens, and the
	// client's paths, which State reports back.
	streams map[procKey]*judgedStreams
}

// procKey names a task's init (exec "") or one of its execs.
type procKey struct{ id, exec string }

// RegisterTTRPC serves the task API under both names: containerd.task.v3
// (containerd 2.x) and containerd.task.v2 (containerd 1.6 and 1.7, which
// only know that one). The two protos differ only in their package name,
// so the v2 service converts each message through its wire form.
func (s *service) RegisterTTRPC(server *ttrpc.Server) error {
	taskAPI.RegisterTTRPCTaskService(server, s)
	taskv2.RegisterTaskService(server, &v2Service{s})
	return nil
}

// Create runs the container with bulkhead, whatever options the caller
// sent. Runc options keep their other fields (systemd cgroup, criu
// paths); any other options message (CRI's generic runtimeoptions for a
// runtime type that is not io.containerd.runc.v2) or none becomes runc
// options naming bulkhead. The state root is the containerd's own
// (runtimeRoot).
func (s *service) Create(ctx context.Context, r *taskAPI.CreateTaskRequest) (*taskAPI.CreateTaskResponse, error) {
	if err := rootfsMountsRefusal(r.Bundle, r.ID, r.Rootfs); err != nil {
		return nil, err
	}
	streams, err := judgeStdio(r.Stdin, r.Stdout, r.Stderr)
	if err != nil {
		return nil, err
	}
	// The init's streams are open once Create returns.
	defer streams.release()
	root, err := runtimeRoot(r.Bundle)
	if err != nil {
		return nil, err
	}
	opts, err := s.runcOptions(r.Options, inferSystemd(r.Bundle, sdutil.IsRunningSystemd()), root)
	if err != nil {
		return nil, err
	}
	r.Options = opts
	r.Stdin, r.Stdout, r.Stderr = streams.handed()
	res, err := s.TTRPCTaskService.Create(ctx, r)
	if err == nil {
		s.keep(procKey{r.ID, ""}, streams)
	}
	return res, err
}

// Exec runs a process in the container with its stdio judged as
// Create's is; the task service opens them at the exec's Start.
func (s *service) Exec(ctx context.Context, r *taskAPI.ExecProcessRequest) (*emptypb.Empty, error) {
	streams, err := judgeStdio(r.Stdin, r.Stdout, r.Stderr)
	if err != nil {
		return nil, err
	}
	r.Stdin, r.Stdout, r.Stderr = streams.handed()
	res, err := s.TTRPCTaskService.Exec(ctx, r)
	if err != nil {
		streams.release()
		return nil, err
	}
	s.keep(procKey{r.ID, r.ExecID}, streams)
	return res, nil
}

// Start starts a process; an exec's streams are open once it has
// started. An exec whose Start failed is not started again: runc's task
// service leaves it "created", and a second Start opened its streams
// again and, failing again, closed a closed channel, which ended the
// shim and every container it serves. Its judged streams stay held until
// it is deleted, never a closed descriptor whose number another open took.
func (s *service) Start(ctx context.Context, r *taskAPI.StartRequest) (*taskAPI.StartResponse, error) {
	key := procKey{r.ID, r.ExecID}
	s.mu.Lock()
	j := s.streams[key]
	failed := j != nil && j.startFailed
	s.mu.Unlock()
	if failed {
		return nil, fmt.Errorf("bulkhead: exec %s of %s is not started again: its first start failed; delete it and exec anew", r.ExecID, r.ID)
	}
	res, err := s.TTRPCTaskService.Start(ctx, r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.streams[key]; j != nil && r.ExecID != "" {
		if err != nil {
			j.startFailed = true
		} else {
			j.release()
		}
	}
	return res, err
}

// State reports a process's stdio as the client gave it, not the
// descriptors the task service was handed.
func (s *service) State(ctx context.Context, r *taskAPI.StateRequest) (*taskAPI.StateResponse, error) {
	res, err := s.TTRPCTaskService.State(ctx, r)
	if err != nil {
		return res, err
	}
	s.mu.Lock()
	if j := s.streams[procKey{r.ID, r.ExecID}]; j != nil {
		res.Stdin, res.Stdout, res.Stderr = j.paths[0], j.paths[1], j.paths[2]
	}
	s.mu.Unlock()
	return res, nil
}

// Delete forgets a deleted process's streams (all of a task's with its
// init).
func (s *service) Delete(ctx context.Context, r *taskAPI.DeleteRequest) (*taskAPI.DeleteResponse, error) {
	res, err := s.TTRPCTaskService.Delete(ctx, r)
	if err != nil {
		return res, err
	}
	s.mu.Lock()
	for p, j := range s.streams {
		if p.id == r.ID && (r.ExecID == "" || p.exec == r.ExecID) {
			j.release()
			delete(s.streams, p)
		}
	}
	s.mu.Unlock()
	return res, nil
}

// keep records a process's judged streams.
func (s *service) keep(p procKey, j *judgedStreams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.streams[p]; old != nil {
		old.release()
	}
	s.streams[p] = j
}

// Checkpoint is refused: the image path is the client's word, and the
// backend, as root, made every directory of it and wrote the job's
// memory there (runsc), anywhere on the host.
func (s *service) Checkpoint(ctx context.Context, r *taskAPI.CheckpointTaskRequest) (*emptypb.Empty, error) {
	return nil, fmt.Errorf("bulkhead: checkpoint of %s is refused: its image path (%q) is the client's, and the backend writes the job's memory there as root on the host", r.ID, r.Path)
}

// runtimeRoot is the state root of the containerd that made the task
// whose bundle is <state>/io.containerd.runtime.v2.task/<namespace>/<id>:
// <state>/runc, below which runc's shim keeps <namespace>. runc's shim
// puts every containerd's tasks under /run/containerd/runc, so a client
// of another containerd on the host, with a namespace of the same name,
// reached this one's containers there: its create of a taken id ended in
// the shim's delete of that id, another tenant's running container, and
// its pod annotations joined another tenant's pod. For the host's own
// containerd (state /run/containerd) it is runc's default.
func runtimeRoot(bundle string) (string, error) {
	ns := filepath.Dir(filepath.Clean(bundle))
	if !filepath.IsAbs(bundle) || filepath.Base(filepath.Dir(ns)) != "io.containerd.runtime.v2.task" {
		return "", fmt.Errorf("bundle %s is not laid out as containerd's task directory <state>/io.containerd.runtime.v2.task/<namespace>/<id>", bundle)
	}
	return filepath.Join(filepath.Dir(filepath.Dir(ns)), "runc"), nil
}

// runcOptions turns whatever options came into runc options naming
// bulkhead, with root as the state root. systemd sets SystemdCgroup when
// no runc options said so: the caller wrote a systemd cgroups path
// (slice:prefix:name), which only the systemd driver reads correctly. A
// Root option other than root is refused: it is the caller's way into
// another containerd's containers.
func (s *service) runcOptions(in *anypb.Any, systemd bool, root string) (*anypb.Any, error) {
	opts := &options.Options{}
	isRunc := in.GetTypeUrl() != "" && typeurl.Is(in, opts)
	if isRunc {
		if err := proto.Unmarshal(in.GetValue(), opts); err != nil {
			return nil, fmt.Errorf("runc options: %w", err)
		}
	}
	if opts.Root != "" && filepath.Clean(opts.Root) != root {
		return nil, fmt.Errorf("bulkhead: runc option Root %q is refused: bulkhead keeps each containerd's runtime state in its own state directory, %s for this one; remove the option", opts.Root, root)
	}
	if !isRunc && systemd {
		opts.SystemdCgroup = true
	}
	opts.BinaryName = s.binary
	opts.Root = root
	return typeurl.MarshalAnyToProto(opts)
}

// inferSystemd tells whether a bundle that came without runc options is
// for the systemd cgroup driver: its cgroupsPath has the systemd form and
// systemd runs here. containerd 1.6's CRI writes slice:prefix:name when
// it cannot tell the kubelet's driver, also on hosts without systemd,
// where the systemd driver fails every create. There the cgroupfs driver
// takes it, as runc's own handler does, and bulkhead's cgroups_path rule
// translates it into a plain path. Whether systemd runs is what runc and
// go-systemd ask (sd_booted): /run/systemd/system is a directory.
func inferSystemd(bundle string, systemdRunning bool) bool {
	return systemdRunning && systemdCgroupsPath(bundle)
}

// systemdCgroupsPath reports whether the bundle's linux.cgroupsPath has
// runc's systemd form, slice:prefix:name (a cgroupfs path is absolute and
// has no colons), as CRI writes it for kubelets with the systemd driver.
func systemdCgroupsPath(bundle string) bool {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return false
	}
	var spec struct {
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if json.Unmarshal(data, &spec) != nil || spec.Linux == nil {
		return false
	}
	p := spec.Linux.CgroupsPath
	return strings.Count(p, ":") == 2 && !strings.HasPrefix(p, "/")
}

// v2Service answers containerd.task.v2.Task by calling the v3 service.
type v2Service struct{ s *service }

// call converts req to the v3 request type In, calls fn, and converts the
// answer back to the v2 response type Out.
func call[In, Out proto.Message, Res proto.Message](ctx context.Context, req proto.Message, in In, out Out, fn func(context.Context, In) (Res, error)) (Out, error) {
	if err := convert(req, in); err != nil {
		return out, err
	}
	res, err := fn(ctx, in)
	if err != nil {
		return out, err
	}
	return out, convert(res, out)
}

func convert(from, to proto.Message) error {
	data, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(data, to)
}

func (v *v2Service) State(ctx context.Context, r *taskv2.StateRequest) (*taskv2.StateResponse, error) {
	return call(ctx, r, &taskAPI.StateRequest{}, &taskv2.StateResponse{}, v.s.State)
}

func (v *v2Service) Create(ctx context.Context, r *taskv2.CreateTaskRequest) (*taskv2.CreateTaskResponse, error) {
	return call(ctx, r, &taskAPI.CreateTaskRequest{}, &taskv2.CreateTaskResponse{}, v.s.Create)
}

func (v *v2Service) Start(ctx context.Context, r *taskv2.StartRequest) (*taskv2.StartResponse, error) {
	return call(ctx, r, &taskAPI.StartRequest{}, &taskv2.StartResponse{}, v.s.Start)
}

func (v *v2Service) Delete(ctx context.Context, r *taskv2.DeleteRequest) (*taskv2.DeleteResponse, error) {
	return call(ctx, r, &taskAPI.DeleteRequest{}, &taskv2.DeleteResponse{}, v.s.Delete)
}

func (v *v2Service) Pids(ctx context.Context, r *taskv2.PidsRequest) (*taskv2.PidsResponse, error) {
	return call(ctx, r, &taskAPI.PidsRequest{}, &taskv2.PidsResponse{}, v.s.Pids)
}

func (v *v2Service) Pause(ctx context.Context, r *taskv2.PauseRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.PauseRequest{}, &emptypb.Empty{}, v.s.Pause)
}

func (v *v2Service) Resume(ctx context.Context, r *taskv2.ResumeRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.ResumeRequest{}, &emptypb.Empty{}, v.s.Resume)
}

func (v *v2Service) Checkpoint(ctx context.Context, r *taskv2.CheckpointTaskRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.CheckpointTaskRequest{}, &emptypb.Empty{}, v.s.Checkpoint)
}

func (v *v2Service) Kill(ctx context.Context, r *taskv2.KillRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.KillRequest{}, &emptypb.Empty{}, v.s.Kill)
}

func (v *v2Service) Exec(ctx context.Context, r *taskv2.ExecProcessRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.ExecProcessRequest{}, &emptypb.Empty{}, v.s.Exec)
}

func (v *v2Service) ResizePty(ctx context.Context, r *taskv2.ResizePtyRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.ResizePtyRequest{}, &emptypb.Empty{}, v.s.ResizePty)
}

func (v *v2Service) CloseIO(ctx context.Context, r *taskv2.CloseIORequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.CloseIORequest{}, &emptypb.Empty{}, v.s.CloseIO)
}

func (v *v2Service) Update(ctx context.Context, r *taskv2.UpdateTaskRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.UpdateTaskRequest{}, &emptypb.Empty{}, v.s.Update)
}

func (v *v2Service) Wait(ctx context.Context, r *taskv2.WaitRequest) (*taskv2.WaitResponse, error) {
	return call(ctx, r, &taskAPI.WaitRequest{}, &taskv2.WaitResponse{}, v.s.Wait)
}

func (v *v2Service) Stats(ctx context.Context, r *taskv2.StatsRequest) (*taskv2.StatsResponse, error) {
	return call(ctx, r, &taskAPI.StatsRequest{}, &taskv2.StatsResponse{}, v.s.Stats)
}

func (v *v2Service) Connect(ctx context.Context, r *taskv2.ConnectRequest) (*taskv2.ConnectResponse, error) {
	return call(ctx, r, &taskAPI.ConnectRequest{}, &taskv2.ConnectResponse{}, v.s.Connect)
}

func (v *v2Service) Shutdown(ctx context.Context, r *taskv2.ShutdownRequest) (*emptypb.Empty, error) {
	return call(ctx, r, &taskAPI.ShutdownRequest{}, &emptypb.Empty{}, v.s.Shutdown)
}

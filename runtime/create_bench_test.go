package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

// benchValues are the create flags of an in-process create: only --bundle.
type benchValues struct {
	noValues
	bundle string
}

func (v benchValues) String(name string) string {
	if name == "bundle" {
		return v.bundle
	}
	return ""
}

func (v benchValues) IsSet(name string) bool { return name == "bundle" }

// benchEnv is a state root, a configuration with its audit log in a temp
// dir, and a busybox bundle that sleeps.
func benchEnv(b *testing.B) (*Globals, string, []byte) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root: a real runc container is created")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		b.Skipf("needs runc on PATH: %v", err)
	}
	if _, err := os.Stat(bundle.Busybox); err != nil {
		b.Skipf("needs busybox-static for the bundle: %v", err)
	}
	logrus.SetLevel(logrus.WarnLevel) // one info line per create would bury the results
	dir := b.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("audit_log = %q\n", filepath.Join(dir, "audit.jsonl"))), 0o644); err != nil {
		b.Fatal(err)
	}
	g := &Globals{Root: filepath.Join(dir, "state"), Backend: "runc"}
	g.SetConfig(cfg, true)
	bdir := bundle.New(b, []string{"sleep", "300"})
	orig, err := os.ReadFile(filepath.Join(bdir, "config.json"))
	if err != nil {
		b.Fatal(err)
	}
	return g, bdir, orig
}

// quietCreate is Create with the process's descriptors 1 and 2 on
// /dev/null: an in-process create hands the backend the process's own,
// which the container's init keeps, and refuses a file of root's (`make
// bench > out`), which runc would give to the container's uid for good.
func quietCreate(b *testing.B, g *Globals, bdir, id string) error {
	b.Helper()
	null, err := unix.Open(os.DevNull, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(null)
	for _, fd := range []int{1, 2} {
		saved, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Dup2(null, fd); err != nil {
			b.Fatal(err)
		}
		defer func() {
			unix.Dup2(saved, fd)
			unix.Close(saved)
		}()
	}
	return Create(g, benchValues{bundle: bdir}, id)
}

func benchID(b *testing.B, i int) string {
	return fmt.Sprintf("bench-%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, i)
}

// BenchmarkVerify measures verify.Container alone on a running runc container
// created through bulkhead's create (so the spec is the policy's). It also
// reports, as metrics, the median of bulkhead's whole create (policy,
// hand-over, verification) and of runc's create of the same spec, and the
// share of create that verification costs.
func BenchmarkVerify(b *testing.B) {
	g, bdir, orig := benchEnv(b)
	id := benchID(b, 0)
	if err := quietCreate(b, g, bdir, id); err != nil {
		b.Fatalf("create: %v", err)
	}
	b.Cleanup(func() { _ = Delete(g, forceValues{}, id) })
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		b.Fatal(err)
	}
	rec, err := reg.Get(id)
	if err != nil {
		b.Fatal(err)
	}
	handed := handedSpec(b, reg, id)
	prof := specs.DefaultProfile()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The expectation is part of what create pays for.
		e, err := verify.Expect(&prof, handed, "runc")
		if err != nil {
			b.Fatal(err)
		}
		r, err := verify.Container(rec.InitPid, e)
		if err != nil || r.Err() != nil {
			b.Fatalf("verify: %v %v", err, r.Err())
		}
	}
	b.StopTimer()
	verifyNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)

	const rounds = 5
	withVerify := medianOf(b, rounds, func(i int) time.Duration {
		return timeBulkheadCreate(b, g, bdir, orig, i)
	})
	runcOnly := medianOf(b, rounds, func(i int) time.Duration {
		return timeRuncCreate(b, g, bdir, handed, i)
	})
	b.ReportMetric(float64(withVerify.Microseconds())/1000, "ms/bulkhead-create")
	b.ReportMetric(float64(runcOnly.Microseconds())/1000, "ms/runc-create")
	b.ReportMetric(100*verifyNs/float64(withVerify.Nanoseconds()), "verify-%-of-create")
}

// BenchmarkCreate times one create, without the delete that follows: runc
// alone with the policy's spec, and bulkhead's create with policy and
// verification. The difference is what bulkhead adds to the create path.
func BenchmarkCreate(b *testing.B) {
	g, bdir, orig := benchEnv(b)
	b.Run("runc", func(b *testing.B) {
		// The policy's spec, written once by a bulkhead create.
		id := benchID(b, 0)
		if err := quietCreate(b, g, bdir, id); err != nil {
			b.Fatalf("create: %v", err)
		}
		reg, err := state.OpenRegistry(g.Root)
		if err != nil {
			b.Fatal(err)
		}
		handed := handedSpec(b, reg, id)
		_ = Delete(g, forceValues{}, id)
		var total time.Duration
		for i := 0; i < b.N; i++ {
			total += timeRuncCreate(b, g, bdir, handed, i)
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/create")
	})
	b.Run("bulkhead", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			total += timeBulkheadCreate(b, g, bdir, orig, i)
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/create")
	})
}

// handedSpec is the spec create handed the backend: the config.json of
// bulkhead's own bundle in the container's state directory, not the
// caller's, which create leaves as it was.
func handedSpec(b *testing.B, reg *state.Registry, id string) *rspec.Spec {
	b.Helper()
	handed, _, err := specs.Load(filepath.Join(reg.Dir(id), privateBundleDir))
	if err != nil {
		b.Fatal(err)
	}
	return handed
}

// timeBulkheadCreate restores the caller's config.json, times Create, then
// deletes the container.
func timeBulkheadCreate(b *testing.B, g *Globals, bdir string, orig []byte, i int) time.Duration {
	b.Helper()
	if err := os.WriteFile(filepath.Join(bdir, "config.json"), orig, 0o644); err != nil {
		b.Fatal(err)
	}
	id := benchID(b, i)
	start := time.Now()
	err := quietCreate(b, g, bdir, id)
	d := time.Since(start)
	if err != nil {
		b.Fatalf("create: %v", err)
	}
	if err := Delete(g, forceValues{}, id); err != nil {
		b.Fatalf("delete: %v", err)
	}
	return d
}

// timeRuncCreate times runc's create of the policy's spec (in a bundle of
// its own, with runc's default cgroup path), then deletes the container.
func timeRuncCreate(b *testing.B, g *Globals, bdir string, handed *rspec.Spec, i int) time.Duration {
	b.Helper()
	s := *handed
	lin := *handed.Linux
	lin.CgroupsPath = ""
	s.Linux = &lin
	s.Root = &rspec.Root{Path: filepath.Join(bdir, "rootfs"), Readonly: handed.Root.Readonly}
	rb := filepath.Join(b.TempDir(), "bundle")
	if err := os.MkdirAll(rb, 0o755); err != nil {
		b.Fatal(err)
	}
	data, err := specs.Marshal(&s)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rb, "config.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(g.Root, "runc-bench")
	id := benchID(b, i)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The container inherits runc's stdio: a file, not a pipe Wait would
	// drain until the container exits.
	log, err := os.CreateTemp(b.TempDir(), "runc-*.log")
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, "runc", "--root", root, "create", "--bundle", rb, id)
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	_ = exec.Command("runc", "--root", root, "delete", "--force", id).Run()
	if err != nil {
		out, _ := os.ReadFile(log.Name())
		b.Fatalf("runc create: %v: %s", err, out)
	}
	return d
}

func medianOf(b *testing.B, n int, f func(int) time.Duration) time.Duration {
	b.Helper()
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = f(i)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

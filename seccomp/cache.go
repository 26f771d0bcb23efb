package seccomp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// DefaultCacheDir remembers which profiles compiled, so that a create does
// not regenerate the BPF of the same profile every time (about 60 ms for
// the default profile's five architectures, as long as runc's whole
// create). /run is a tmpfs: the cache goes with a reboot.
const DefaultCacheDir = "/run/bulkhead-seccomp-cache"

// cacheDir is DefaultCacheDir; tests point it at a temporary directory, and
// "" turns the cache off.
var cacheDir = DefaultCacheDir

// compileVersion names the checks compile makes. Change it whenever
// compile or buildFilter change what they accept, so that no entry written
// by older code vouches for a profile.
const compileVersion = "compile-1"

// validateCached is Validate with compile's result cached. The conversion
// (every name resolved on every architecture, actions, arguments, flags)
// runs every time; only the BPF generation and its size check are skipped
// when an entry says this exact profile compiled with this libseccomp, on
// this architecture, by this bulkhead binary.
//
// The cache is an optimisation of validation, not part of the boundary:
// runc compiles the filter again and the kernel enforces it. An entry is
// trusted only in a directory owned by the caller's uid (root) that nobody
// else can write, and any problem with the cache means a full compile,
// never an error.
func validateCached(p *rspec.LinuxSeccomp, dir string) error {
	spec, err := convert(p)
	if err != nil {
		return err
	}
	key, ok := cacheKey(p)
	if ok && dir != "" && cacheHit(dir, key) {
		return nil
	}
	if err := compile(spec); err != nil {
		return err
	}
	if ok && dir != "" {
		cacheStore(dir, key)
	}
	return nil
}

// cacheKey hashes everything compile's answer depends on. ok is false when
// one of them cannot be read; the profile is then compiled every time.
func cacheKey(p *rspec.LinuxSeccomp) (key string, ok bool) {
	profile, err := json.Marshal(p)
	if err != nil {
		return "", false
	}
	native, err := libseccomp.GetNativeArch()
	if err != nil {
		return "", false
	}
	major, minor, micro := libseccomp.GetLibraryVersion()
	api, _ := libseccomp.GetAPI()
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "bulkhead seccomp %s\nlibseccomp %d.%d.%d api %d\nnative %s\nexecutable %s %d %d\n",
		compileVersion, major, minor, micro, api, native, exe, st.Size(), st.ModTime().UnixNano())
	h.Write(profile)
	return hex.EncodeToString(h.Sum(nil)), true
}

func cacheEntry(key string) []byte {
	return []byte("bulkhead seccomp profile compiled\n" + key + "\n")
}

// privateDir reports whether dir is a real directory (not a symlink) owned
// by this process's uid and writable by nobody else.
func privateDir(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

func cacheHit(dir, key string) bool {
	if !privateDir(dir) {
		return false
	}
	path := filepath.Join(dir, key)
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 || st.Size() > 1024 {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return false
	}
	data, err := os.ReadFile(path)
	return err == nil && bytes.Equal(data, cacheEntry(key))
}

// cacheStore records a successful compile, best effort: written to a
// temporary file and renamed, so a reader sees a whole entry or none.
func cacheStore(dir, key string) {
	if err := os.MkdirAll(dir, 0o700); err != nil || !privateDir(dir) {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(cacheEntry(key))
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, key)) != nil {
		os.Remove(f.Name())
	}
}

package seccomp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
const compileVersion = "compile-2"

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
	_, err := compiledCached(p, dir)
	return err
}

// compiledCached is validateCached that also returns what libseccomp
// generated, from the cache entry when there is one.
func compiledCached(p *rspec.LinuxSeccomp, dir string) (Compiled, error) {
	spec, err := convert(p)
	if err != nil {
		return Compiled{}, err
	}
	key, ok := cacheKey(p)
	if ok && dir != "" {
		if c, hit := cacheHit(dir, key); hit {
			return c, nil
		}
	}
	c, err := compile(spec)
	if err != nil {
		return Compiled{}, err
	}
	if ok && dir != "" {
		cacheStore(dir, key, c)
	}
	return c, nil
}

// CompiledFor validates p as ForProfile does and returns what libseccomp
// generates for it, the programs runc loads (see Compiled).
func CompiledFor(p *rspec.LinuxSeccomp) (Compiled, error) {
	return compiledCached(p, cacheDir)
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

func cacheEntry(key string, c Compiled) []byte {
	e := "bulkhead seccomp profile compiled\n" + key + "\n"
	for _, f := range c.Forms {
		e += fmt.Sprintf("program sha256 %s insns %d\n", f.Digest, f.Insns)
	}
	return []byte(e)
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

func cacheHit(dir, key string) (Compiled, bool) {
	if !privateDir(dir) {
		return Compiled{}, false
	}
	path := filepath.Join(dir, key)
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 || st.Size() > 1024 {
		return Compiled{}, false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return Compiled{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Compiled{}, false
	}
	var c Compiled
	head := "bulkhead seccomp profile compiled\n" + key + "\n"
	rest, found := bytes.CutPrefix(data, []byte(head))
	if !found {
		return Compiled{}, false
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n") {
		var f BPF
		if _, err := fmt.Sscanf(line, "program sha256 %64s insns %d", &f.Digest, &f.Insns); err != nil || len(f.Digest) != 64 || f.Insns <= 0 {
			return Compiled{}, false
		}
		c.Forms = append(c.Forms, f)
	}
	// Re-encoding must give the same bytes: no trailing or odd content.
	if len(c.Forms) == 0 || !bytes.Equal(data, cacheEntry(key, c)) {
		return Compiled{}, false
	}
	return c, true
}

// cacheStore records a successful compile, best effort: written to a
// temporary file and renamed, so a reader sees a whole entry or none.
func cacheStore(dir, key string, c Compiled) {
	if err := os.MkdirAll(dir, 0o700); err != nil || !privateDir(dir) {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(cacheEntry(key, c))
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, key)) != nil {
		os.Remove(f.Name())
	}
}

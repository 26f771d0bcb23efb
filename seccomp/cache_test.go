package seccomp

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestMain keeps the package's tests out of the host's DefaultCacheDir.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bulkhead-seccomp-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = filepath.Join(dir, "cache")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestValidateCached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	p := Default()
	if err := validateCached(p, dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("no cache directory after a compile: %v", err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %04o, want 0700", st.Mode().Perm())
	}
	ents := cacheEntries(t, dir)
	if len(ents) != 1 {
		t.Fatalf("cache entries %v, want one", ents)
	}
	key, ok := cacheKey(p)
	if !ok || ents[0] != key || !hit(dir, key) {
		t.Fatalf("entry %v is not a hit for key %s (ok %v)", ents, key, ok)
	}

	// A different profile is a different key: compiled and stored again.
	q := Default()
	q.Syscalls = q.Syscalls[:len(q.Syscalls)-1]
	if err := validateCached(q, dir); err != nil {
		t.Fatal(err)
	}
	if n := len(cacheEntries(t, dir)); n != 2 {
		t.Errorf("%d entries after a second profile, want 2", n)
	}
}

// TestValidateCachedStillChecksNames: a cached compile never excuses a
// name: conversion runs before the cache is looked at.
func TestValidateCachedStillChecksNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	p := Default()
	p.Syscalls[0].Names = append(p.Syscalls[0].Names, "opnat")
	// Plant an entry for exactly this profile, as if it had compiled.
	key, ok := cacheKey(p)
	if !ok {
		t.Fatal("no cache key")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key), cacheEntry(key, fakeCompiled), 0o600); err != nil {
		t.Fatal(err)
	}
	err := validateCached(p, dir)
	if err == nil || !strings.Contains(err.Error(), `"opnat"`) {
		t.Fatalf("validateCached = %v, want an error naming opnat", err)
	}
}

// TestCacheNotTrusted: entries in a directory others can write, entries
// others can write, symlinks and wrong contents are not hits.
func TestCacheNotTrusted(t *testing.T) {
	p := Default()
	key, _ := cacheKey(p)
	setup := func(t *testing.T, dirMode, fileMode os.FileMode, content []byte) string {
		dir := filepath.Join(t.TempDir(), "cache")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, key), content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, key), fileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, dirMode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if !hit(setup(t, 0o700, 0o600, cacheEntry(key, fakeCompiled)), key) {
		t.Fatal("a proper entry is not a hit")
	}
	if hit(setup(t, 0o777, 0o600, cacheEntry(key, fakeCompiled)), key) {
		t.Error("hit in a world-writable directory")
	}
	if hit(setup(t, 0o700, 0o666, cacheEntry(key, fakeCompiled)), key) {
		t.Error("hit on a world-writable entry")
	}
	if hit(setup(t, 0o700, 0o600, []byte("something else")), key) {
		t.Error("hit on an entry with other contents")
	}
	real := setup(t, 0o700, 0o600, cacheEntry(key, fakeCompiled))
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if hit(link, key) {
		t.Error("hit through a symlinked directory")
	}
	// A directory the cache cannot trust is left alone and the profile
	// still validates, by compiling.
	open := setup(t, 0o777, 0o600, []byte("x"))
	if err := validateCached(p, open); err != nil {
		t.Fatal(err)
	}
	if got := cacheEntries(t, open); len(got) != 1 {
		t.Errorf("entries %v written into an untrusted directory", got)
	}
}

// TestValidateCachedRefusesUncompilable: a profile that converts but does
// not compile is an error and leaves no entry.
func TestValidateCachedRefusesUncompilable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	// 1500 conditions on distinct 64-bit values: about 6000 BPF
	// instructions, more than the kernel loads.
	p := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Architectures: []rspec.Arch{rspec.ArchX86_64}}
	for i := 0; i < 1500; i++ {
		p.Syscalls = append(p.Syscalls, allowIf("personality", rspec.LinuxSeccompArg{
			Index: 0, Op: rspec.OpEqualTo, Value: uint64(i)<<32 | uint64(i*7919+100)}))
	}
	err := validateCached(p, dir)
	if err == nil {
		t.Fatal("validateCached of an oversized profile = nil")
	}
	if !strings.Contains(err.Error(), "BPF instructions") {
		t.Errorf("error %q does not mention the BPF size", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("entries %v after a failed compile", ents)
	}
}

// BenchmarkForProfileUncached is the create path's seccomp cost without
// the cache; BenchmarkForProfile (default_test.go) with it, after the first
// iteration.
func BenchmarkForProfileUncached(b *testing.B) {
	saved := cacheDir
	cacheDir = ""
	defer func() { cacheDir = saved }()
	for b.Loop() {
		if _, _, err := forProfileCompiled("", nil, false, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConvert is the part that runs on every create: name
// resolution on every architecture and the rule conversion.
func BenchmarkConvert(b *testing.B) {
	for b.Loop() {
		if _, err := convert(Default()); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeCompiled is a well-formed program identity for planted entries.
var fakeCompiled = Compiled{Forms: []BPF{{Digest: strings.Repeat("ab", 32), Insns: 42}}}

func hit(dir, key string) bool {
	_, ok := cacheHit(dir, key)
	return ok
}

// TestProgramCached: the program identity a compile stores is the one a
// later lookup returns, without compiling again.
func TestProgramCached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	p := Default()
	first, err := compiledCached(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The default profile has more than 32 names: a tree and a linear form.
	if len(first.Forms) != 2 || first.Forms[0].Insns <= 0 || first.Forms[1].Insns <= 0 {
		t.Fatalf("compiled %+v", first)
	}
	key, _ := cacheKey(p)
	got, ok := cacheHit(dir, key)
	if !ok || !reflect.DeepEqual(got, first) {
		t.Fatalf("cache holds %+v (hit %v), compile gave %+v", got, ok, first)
	}
	again, err := compiledCached(p, "")
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("an uncached compile gives %+v %v, the cached one %+v", again, err, first)
	}
}

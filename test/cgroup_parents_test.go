package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestCgroupParentsMadeForContainersGo: runc and runsc make every missing
// group above a caller's cgroupsPath (Docker's --cgroup-parent) and
// remove only the container's own, so each new parent a caller named
// stayed on the host, empty, for good. The groups a create made go with
// the last container below them; one still holding a container stays
// until that one goes; a group the administrator made stays, empty or
// not.
func TestCgroupParentsMadeForContainersGo(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			top := fmt.Sprintf("/bhparents-%s-%d", backend, os.Getpid())
			admin := fmt.Sprintf("/bhadmin-%s-%d", backend, os.Getpid())
			// A group that holds others' containers must be one of
			// cgroup_parents, as Docker's /docker is by default.
			cfg, _ := workspaceConfig(t, fmt.Sprintf("[profiles.default]\ncgroup_parents = [%q, %q, \"/unified\"]\n", top, top+"/shared"))
			g := []string{"--root", root, "--config", cfg, "--backend", backend}
			t.Cleanup(func() {
				for _, p := range []string{top + "/shared", top, admin, fmt.Sprintf("/unified/bhparents-%s-%d", backend, os.Getpid()), "/unified"} {
					dirs, _ := cgroups.GroupDirs(p)
					for d := range dirs {
						os.Remove(d)
					}
				}
			})
			created := map[string]bool{}
			create := func(name, parent string) string {
				id := uniqueID(name)
				b := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = parent + "/" + id })
				must(t, append(g, "create", "--bundle", b, id)...)
				created[id] = true
				t.Cleanup(func() {
					if created[id] {
						bulkhead(t, "", append(g, "delete", "--force", id)...)
					}
				})
				return id
			}
			remove := func(id string) {
				must(t, append(g, "delete", "--force", id)...)
				created[id] = false
			}

			// Two containers below one new parent, two levels down.
			a := create("parent-a", top+"/shared")
			b := create("parent-b", top+"/shared")
			remove(a)
			if !cgroups.Exists(top + "/shared") {
				t.Fatalf("%s/shared went with one container while another is in it", top)
			}
			remove(b)
			if cgroups.Exists(top) {
				t.Errorf("%s, made for the containers, is left after the last of them went", top)
			}

			// No container's group lies below another's, even one that has
			// stopped and holds no process: it would be under that
			// container's limits and end with its delete.
			// A container in audit mode hands its path over unjudged, but
			// its group is a container's all the same.
			cfgAudit, _ := workspaceConfig(t, fmt.Sprintf("[profiles.default]\nmode = \"audit\"\ncgroup_parents = [%q]\n", top))
			audit := []string{"--root", root, "--config", cfgAudit, "--backend", backend}
			for _, upper := range [][]string{g, audit} {
				stopped := uniqueID("parent-stopped")
				sb := bundle.New(t, []string{"true"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = top + "/" + stopped })
				must(t, slices.Concat(upper, []string{"create", "--bundle", sb, stopped})...)
				t.Cleanup(func() { bulkhead(t, "", slices.Concat(upper, []string{"delete", "--force", stopped})...) })
				must(t, slices.Concat(upper, []string{"start", stopped})...)
				waitStatus(t, upper, stopped, "stopped")
				below := uniqueID("parent-below")
				bb := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = top + "/" + stopped + "/" + below })
				r := bulkhead(t, "", slices.Concat(g, []string{"create", "--bundle", bb, below})...)
				if r.code == 0 {
					bulkhead(t, "", slices.Concat(g, []string{"delete", "--force", below})...)
				}
				if want := "another container's group"; r.code == 0 || !strings.Contains(r.stderr, want) {
					t.Errorf("create below the group of a stopped container (config %s): exit %d, want refused naming %q\n%s", upper[3], r.code, want, r.stderr)
				}
				must(t, slices.Concat(upper, []string{"delete", "--force", stopped})...)
			}

			// Containers created and deleted side by side below one new
			// parent, as dockerd's below /docker: the last to go takes it.
			ids := make([]string, 4)
			bundles := make([]string, len(ids))
			for i := range ids {
				ids[i] = uniqueID(fmt.Sprintf("parent-side%d", i))
				bundles[i] = bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = top + "/shared/" + ids[i] })
				t.Cleanup(func() { bulkhead(t, "", slices.Concat(g, []string{"delete", "--force", ids[i]})...) })
			}
			sideBySide := func(verb func(i int) []string) {
				var wg sync.WaitGroup
				for i := range ids {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if r := bulkhead(t, "", verb(i)...); r.code != 0 {
							t.Errorf("bulkhead %v: exit %d\n%s", verb(i), r.code, r.stderr)
						}
					}()
				}
				wg.Wait()
			}
			sideBySide(func(i int) []string { return slices.Concat(g, []string{"create", "--bundle", bundles[i], ids[i]}) })
			sideBySide(func(i int) []string { return slices.Concat(g, []string{"delete", "--force", ids[i]}) })
			if cgroups.Exists(top) {
				t.Errorf("%s, made for containers created side by side, is left after the last of them went", top)
			}

			// The administrator's directories of a parent stay, those the
			// backend made go: made in one hierarchy before the create,
			// and in each one the backend left alone while it ran.
			mine := v1AndV2Dirs(t, admin)[:1]
			if err := os.Mkdir(mine[0], 0o755); err != nil {
				t.Fatal(err)
			}
			id := create("parent-admin", admin)
			for _, d := range v1AndV2Dirs(t, admin) {
				if err := os.Mkdir(d, 0o755); err == nil {
					mine = append(mine, d)
				} else if !os.IsExist(err) {
					t.Fatal(err)
				}
			}
			remove(id)
			left, err := cgroups.GroupDirs(admin)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range mine {
				if _, ok := left[d]; !ok {
					t.Errorf("%s, the administrator's, was removed with a container", d)
				}
				delete(left, d)
			}
			for d := range left {
				t.Errorf("%s, which the backend made, is left", d)
			}

			// A group named as a hierarchy is (/unified, /memory) is a
			// group like any other.
			named := fmt.Sprintf("/unified/bhparents-%s-%d", backend, os.Getpid())
			remove(create("parent-named", named))
			if cgroups.Exists(named) {
				t.Errorf("%s, made for a container, is left", named)
			}
			// Another run of this test may have its own group there.
			dirs, _ := cgroups.GroupDirs("/unified")
			for d := range dirs {
				if sub, _ := filepath.Glob(d + "/*/cgroup.procs"); len(sub) == 0 {
					t.Errorf("%s, made for a container, is left", d)
				}
			}
		})
	}
}

// v1AndV2Dirs are the directories of the group at path in every hierarchy
// of this host, as a backend makes them.
func v1AndV2Dirs(t *testing.T, path string) []string {
	t.Helper()
	if v2, err := cgroups.V2(); err != nil {
		t.Fatal(err)
	} else if v2 {
		return []string{filepath.Join("/sys/fs/cgroup", path)}
	}
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), path))
		}
	}
	return dirs
}

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/cprog"
)

// ipcLeft fills a System V shared memory segment and leaves it without
// IPC_RMID, as a job may; with "big", it asks for a segment of 512 MiB.
const ipcLeft = `#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "big") == 0) {
		int id = shmget(IPC_PRIVATE, (size_t)512 << 20, IPC_CREAT | 0600);
		printf("big %s\n", id < 0 ? strerror(errno) : "created");
		return 0;
	}
	int id = shmget(IPC_PRIVATE, 16 << 20, IPC_CREAT | 0600);
	if (id < 0) { perror("shmget"); return 1; }
	char *p = shmat(id, 0, 0);
	if (p == (void *)-1) { perror("shmat"); return 1; }
	memset(p, 1, 16 << 20);
	shmdt(p);
	printf("left %d\n", id);
	return 0;
}
`

// A segment lives in its IPC namespace, not in a process: in a pod, whose
// members share the sandbox's namespace, a member that left one and was
// deleted left its pages on the host, charged to no limit, until the pod
// went; each restart added more. In every IPC namespace a container of
// bulkhead's makes, a segment goes with the last process attached to it,
// and none is larger than the memory limit. runsc keeps System V IPC in
// its own kernel, charged to the sandbox.
func TestSharedMemoryOutlivesNoProcess(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	prog := cprog.Build(t, "ipcleft", []byte(ipcLeft))
	script := "/bin/ipcleft && echo segments $(($(wc -l < /proc/sysvipc/shm) - 1)) && /bin/ipcleft big && echo forced $(cat /proc/sys/kernel/shm_rmid_forced)"
	// A caller's own values under the slashed spelling change nothing.
	b := bundle.New(t, []string{"sh", "-c", script}, func(s *rspec.Spec) {
		s.Linux.Sysctl = map[string]string{"kernel/shm_rmid_forced": "0", "kernel/shmmax": "99999999999"}
	})
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "ipcleft"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := bulkhead(t, "", "--root", root, "run", "--bundle", b, uniqueID("ipc"))
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"segments 0", "big Invalid argument", "forced 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the container shows no %q:\n%s", want, r.stdout)
		}
	}
}

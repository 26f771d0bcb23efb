package runtime

import (
	"strings"
	"testing"
)

func TestRuncStateOnlyDestroy(t *testing.T) {
	const plain = `{"id":"c","init_process_pid":1234,"init_process_start":99,"created":"2026-01-01T00:00:00Z",` +
		`"rootless":false,"cgroup_paths":{"pids":"/sys/fs/cgroup/pids/bulkhead/c","":"/sys/fs/cgroup/unified/bulkhead/c"},` +
		`"namespace_paths":{},"external_descriptors":[],"intel_rdt_path":"",` +
		`"config":{"cgroups":{"path":"/bulkhead/c"},"namespaces":[{"type":"NEWNS","path":""},{"type":"NEWPID","path":""}],` +
		`"Hooks":{"poststart":null,"poststop":null}}}`
	for _, tc := range []struct {
		name, old, new string
		want           bool
	}{
		{"runc's plain container", "", "", true},
		{"a key runc 1.0 to 1.3 do not write", `"id":"c",`, `"id":"c","later":1,`, false},
		{"the systemd driver", `"path":"/bulkhead/c"`, `"path":"/bulkhead/c","Systemd":true`, false},
		{"rootless cgroups", `"path":"/bulkhead/c"`, `"path":"/bulkhead/c","Rootless":true`, false},
		{"a rootless container", `"rootless":false`, `"rootless":true`, false},
		{"a poststop hook", `"poststop":null`, `"poststop":[{"path":"/bin/true"}]`, false},
		{"a joined pid namespace", `{"type":"NEWPID","path":""}`, `{"type":"NEWPID","path":"/proc/1/ns/pid"}`, false},
		{"no pid namespace", `,{"type":"NEWPID","path":""}`, ``, false},
		{"an Intel RDT group", `"intel_rdt_path":""`, `"intel_rdt_path":"/sys/fs/resctrl/c"`, false},
		{"a group outside the cgroup mounts", `"/sys/fs/cgroup/pids/bulkhead/c"`, `"/etc"`, false},
		{"no groups", `"cgroup_paths":{"pids":"/sys/fs/cgroup/pids/bulkhead/c","":"/sys/fs/cgroup/unified/bulkhead/c"}`, `"cgroup_paths":{}`, false},
		{"not JSON", `{"id"`, `{id`, false},
		{"the config's other members", `"config":{`, `"config":{"mounts":[{"source":"/x"}],"seccomp":{"default_action":2},`, true},
		{"a poststop hook under a key in another case", `"Hooks":{"poststart":null,"poststop":null}`, `"hooks":{"poststop":[{"path":"/bin/true"}]}`, false},
	} {
		data := plain
		if tc.old != "" {
			if !strings.Contains(data, tc.old) {
				t.Fatalf("%s: %q is not in the state", tc.name, tc.old)
			}
			data = strings.Replace(data, tc.old, tc.new, 1)
		}
		var st runcState
		if got := st.decode([]byte(data)) && st.onlyDestroy(); got != tc.want {
			t.Errorf("%s: decode and onlyDestroy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A state with a key bulkhead does not know still names its groups, whose
// leftovers are killed before runc deletes it.
func TestRuncStateUnknownKeyKeepsGroups(t *testing.T) {
	var st runcState
	data := `{"id":"c","later":1,"init_process_pid":7,"cgroup_paths":{"pids":"/sys/fs/cgroup/pids/bulkhead/c"},"config":{}}`
	if !st.decode([]byte(data)) {
		t.Fatal("decode failed")
	}
	if !st.unknownKey || st.onlyDestroy() || st.InitPid != 7 || st.CgroupPaths["pids"] != "/sys/fs/cgroup/pids/bulkhead/c" {
		t.Fatalf("decoded %+v", st)
	}
}

package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/state"
)

// parsed is what a command line turned into: the verb, its positional
// arguments, the globals, and the flags bulkhead would hand to runc.
type parsed struct {
	verb      string
	args      []string
	forwarded []string
	g         runtime.Globals
}

func parseArgv(t testing.TB, argv []string) (parsed, error) {
	var p parsed
	g := &runtime.Globals{Argv0: argv[0]}
	record := func(g *runtime.Globals, verb string, c *cli.Context) error {
		p.verb = verb
		p.args = c.Args().Slice()
		p.forwarded, _ = runtime.ForwardFlags(verb, c, false)
		return nil
	}
	err := parse(g, wiring{dispatch: record}, argv)
	p.g = *g
	return p, err
}

// Argument vectors as engines send them (ENVIRONMENT.md, go-runc, the
// runtime-tools validation suite).
func TestParseArgv(t *testing.T) {
	const (
		dockerRoot = "/var/run/docker/runtime-runc/moby"
		B          = "/var/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/abc"
	)
	cases := []struct {
		name      string
		argv      string
		verb      string
		args      []string
		forwarded []string
		root, log string
		profile   string
		backend   string
	}{
		{"dockerd create", "bulkhead --root " + dockerRoot + " --log " + B + "/log.json --log-format json create --bundle " + B + " --pid-file " + B + "/init.pid abc",
			"create", []string{"abc"}, []string{"--bundle=" + B, "--pid-file=" + B + "/init.pid"}, dockerRoot, B + "/log.json", "", ""},
		{"dockerd runtimeArgs first", "bulkhead --profile gvisor --backend runsc --root " + dockerRoot + " --log L --log-format json create --bundle " + B + " abc",
			"create", []string{"abc"}, []string{"--bundle=" + B}, dockerRoot, "L", "gvisor", "runsc"},
		{"bulkhead flags after runc's", "bulkhead --root R --log L --profile p create --bundle B abc",
			"create", []string{"abc"}, []string{"--bundle=B"}, "R", "L", "p", ""},
		{"dockerd create -it", "bulkhead --root R --log L --log-format json create --bundle B --pid-file P --console-socket /tmp/pty.sock abc",
			"create", []string{"abc"}, []string{"--bundle=B", "--console-socket=/tmp/pty.sock", "--pid-file=P"}, "R", "L", "", ""},
		{"dockerd start", "bulkhead --root R --log L --log-format json start abc", "start", []string{"abc"}, nil, "R", "L", "", ""},
		{"dockerd delete", "bulkhead --root R --log L --log-format json delete abc", "delete", []string{"abc"}, nil, "R", "L", "", ""},
		{"dockerd delete --force", "bulkhead --root R --log L --log-format json delete --force abc", "delete", []string{"abc"}, []string{"--force=true"}, "R", "L", "", ""},
		{"dockerd exec", "bulkhead --root R --log L --log-format json exec --process /tmp/p.json --detach --pid-file /tmp/e.pid abc",
			"exec", []string{"abc"}, []string{"--process=/tmp/p.json", "--detach=true", "--pid-file=/tmp/e.pid"}, "R", "L", "", ""},
		{"dockerd exec -it", "bulkhead --root R exec --process F --console-socket S --detach --pid-file P abc",
			"exec", []string{"abc"}, []string{"--console-socket=S", "--process=F", "--detach=true", "--pid-file=P"}, "R", "", "", ""},
		{"dockerd top", "bulkhead --root R ps --format json abc", "ps", []string{"abc"}, []string{"--format=json"}, "R", "", "", ""},
		{"dockerd update", "bulkhead --root R update --resources - abc", "update", []string{"abc"}, []string{"--resources=-"}, "R", "", "", ""},
		{"dockerd stop", "bulkhead --root R kill abc 15", "kill", []string{"abc", "15"}, nil, "R", "", "", ""},
		{"dockerd pause", "bulkhead --root R pause abc", "pause", []string{"abc"}, nil, "R", "", "", ""},
		{"dockerd features", "bulkhead features", "features", []string{}, nil, state.DefaultRoot, "", "", ""},
		{"go-runc create", "bulkhead --root /run/containerd/runc/k8s.io --log /run/l.json --log-format json --systemd-cgroup create --bundle B --pid-file P --console-socket S --preserve-fds 2 --no-pivot --no-new-keyring abc",
			"create", []string{"abc"}, []string{"--bundle=B", "--console-socket=S", "--pid-file=P", "--no-pivot=true", "--no-new-keyring=true", "--preserve-fds=2"}, "/run/containerd/runc/k8s.io", "/run/l.json", "", ""},
		{"go-runc kill all", "bulkhead --root R kill --all abc 9", "kill", []string{"abc", "9"}, []string{"--all=true"}, "R", "", "", ""},
		{"go-runc events", "bulkhead --root R events --stats --interval 2s abc", "events", []string{"abc"}, []string{"--interval=2s", "--stats=true"}, "R", "", "", ""},
		{"go-runc checkpoint", "bulkhead --root R checkpoint --image-path /ck --leave-running abc", "checkpoint", []string{"abc"}, []string{"--image-path=/ck", "--leave-running=true"}, "R", "", "", ""},
		{"runtime-tools create", "bulkhead create --bundle /b --pid-file /p abc", "create", []string{"abc"}, []string{"--bundle=/b", "--pid-file=/p"}, state.DefaultRoot, "", "", ""},
		{"runtime-tools kill", "bulkhead kill abc KILL", "kill", []string{"abc", "KILL"}, nil, state.DefaultRoot, "", "", ""},
		{"short flags", "bulkhead -root R -log L create -b B abc", "create", []string{"abc"}, []string{"--bundle=B"}, "R", "L", "", ""},
		{"equals form", "bulkhead --root=R --log=L create --bundle=B abc", "create", []string{"abc"}, []string{"--bundle=B"}, "R", "L", "", ""},
		{"id named create", "bulkhead create --bundle B create", "create", []string{"create"}, []string{"--bundle=B"}, state.DefaultRoot, "", "", ""},
		{"id named delete", "bulkhead delete --force delete", "delete", []string{"delete"}, []string{"--force=true"}, state.DefaultRoot, "", "", ""},
		{"id named kill", "bulkhead kill kill 9", "kill", []string{"kill", "9"}, nil, state.DefaultRoot, "", "", ""},
		{"start of id state", "bulkhead state start", "state", []string{"start"}, nil, state.DefaultRoot, "", "", ""},
		{"exec with command", "bulkhead exec -t --env A=1 --env B=2,3 --cap CAP_CHOWN -u 0 abc sh -c true", "exec", []string{"abc", "sh", "-c", "true"},
			[]string{"--env=A=1", "--env=B=2,3", "--tty=true", "--user=0", "--cap=CAP_CHOWN"}, state.DefaultRoot, "", "", ""},
		{"list json", "bulkhead --root R list --format json", "list", []string{}, []string{"--format=json"}, "R", "", "", ""},
		{"spec", "bulkhead spec --bundle /b", "spec", []string{}, []string{"--bundle=/b"}, state.DefaultRoot, "", "", ""},
		{"update single values", "bulkhead update --memory 1g --pids-limit 100 abc", "update", []string{"abc"}, []string{"--memory=1g", "--pids-limit=100"}, state.DefaultRoot, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := parseArgv(t, strings.Fields(c.argv))
			if err != nil {
				t.Fatal(err)
			}
			if p.verb != c.verb {
				t.Errorf("verb %q, want %q", p.verb, c.verb)
			}
			if !reflect.DeepEqual(p.args, c.args) {
				t.Errorf("args %q, want %q", p.args, c.args)
			}
			if !reflect.DeepEqual(p.forwarded, c.forwarded) {
				t.Errorf("forwarded %q, want %q", p.forwarded, c.forwarded)
			}
			// A relative --root is taken from the caller's directory, as runc
			// takes it.
			root := c.root
			if root != "" && !filepath.IsAbs(root) {
				root, _ = filepath.Abs(root)
			}
			if p.g.Root != root || p.g.Log != c.log || p.g.Profile != c.profile || p.g.Backend != c.backend {
				t.Errorf("globals root %q log %q profile %q backend %q, want %q %q %q %q",
					p.g.Root, p.g.Log, p.g.Profile, p.g.Backend, root, c.log, c.profile, c.backend)
			}
		})
	}
}

func TestParseArgvRefuses(t *testing.T) {
	for _, argv := range []string{
		"bulkhead frobnicate abc",
		"bulkhead create --no-such-flag abc",
		"bulkhead --no-such-global create abc",
		"bulkhead create --preserve-fds notanumber abc",
	} {
		if _, err := parseArgv(t, strings.Fields(argv)); err == nil {
			t.Errorf("%q parsed without error", argv)
		}
	}
}

func TestArgv0SelectsBackend(t *testing.T) {
	p, err := parseArgv(t, []string{"/usr/local/bin/bulkhead-runsc", "state", "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if p.g.Argv0 != "/usr/local/bin/bulkhead-runsc" {
		t.Fatalf("argv0 %q not kept", p.g.Argv0)
	}
}

func FuzzParseArgv(f *testing.F) {
	f.Add("--root R --log L --log-format json create --bundle B --pid-file P abc")
	f.Add("exec --process F --detach abc")
	f.Add("kill --all abc 9")
	f.Add("--profile p --backend runsc delete --force abc")
	f.Fuzz(func(t *testing.T, line string) {
		argv := append([]string{"bulkhead"}, strings.Fields(line)...)
		for _, a := range argv {
			if strings.HasPrefix(strings.TrimLeft(a, "-"), "v") {
				return // --version asks the backends; not parsing
			}
		}
		// Parsing never panics; it either names a verb or fails.
		p, err := parseArgv(t, argv)
		if err == nil && p.verb != "" {
			if _, ok := runtime.VerbFlags[p.verb]; !ok {
				t.Fatalf("parsed to unknown verb %q", p.verb)
			}
		}
	})
}

// BenchmarkParseArgv measures parsing dockerd's create command line, which
// every container pays.
func BenchmarkParseArgv(b *testing.B) {
	argv := strings.Fields("bulkhead --root /var/run/docker/runtime-bulkhead/moby --log /b/log.json --log-format json create --bundle /b --pid-file /b/init.pid abc")
	for i := 0; i < b.N; i++ {
		if _, err := parseArgv(b, argv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUsageErrorsAreOneLine: a flag error of any verb, subcommands
// included, is one line on stderr: without OnUsageError urfave printed
// "Incorrect Usage" and the help text on stdout. A global option given
// after the verb says where it goes.
func TestUsageErrorsAreOneLine(t *testing.T) {
	app := newApp(&runtime.Globals{}, wiring{ownVerbs: true})
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil {
				t.Errorf("%s%s has no OnUsageError: its flag errors print help on stdout", prefix, c.Name)
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
	err := parse(&runtime.Globals{}, wiring{ownVerbs: true}, strings.Fields("bulkhead changes export abc --root /run/x"))
	if err == nil || !strings.Contains(err.Error(), "--root is a global option: give it before the verb (bulkhead --root VALUE changes export") {
		t.Errorf("a global option after the verb: %v", err)
	}
	// Before any verb, the error is the flag's alone: LogError names
	// bulkhead once.
	err = parse(&runtime.Globals{}, wiring{ownVerbs: true}, strings.Fields("bulkhead --bogus list"))
	if err == nil || err.Error() != "flag provided but not defined: -bogus" {
		t.Errorf("an unknown global option: %v", err)
	}
}

package specs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// virtualFS are the filesystem types that expose no host files of their
// own: the kernel builds them for the container's namespaces.
var virtualFS = []string{"proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2"}

func isBind(m rspec.Mount) bool {
	return m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind")
}

// ruleHostMounts decides each bind's source: it must lie below one of
// the profile's bind_roots or be a file the engine made for this very
// container, must not be refused by the denylist below (which only adds
// reasons on top of the allowlist), and must hold no socket. Every bind is
// then read-only, nosuid and nodev. Types and options are the mounts
// rule's.
func ruleHostMounts(c *Context, s *rspec.Spec) []Decision {
	var ds []Decision
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if !isBind(*m) {
			continue
		}
		field := "mounts[" + m.Destination + "]"
		src := m.Source
		if !filepath.IsAbs(src) {
			src = cleanAbs(filepath.Join(c.Bundle, src)) // runc resolves relative sources in the bundle
		}
		// The allowlist's answer comes first, the one an operator acts
		// on; the denylist's is added to it, or stands alone for a source
		// below bind_roots.
		outside := ""
		if real, err := c.resolve(src); err == nil {
			outside = c.bindRootsRefusal(s.Annotations, canonicalRun(real))
		}
		why := hostPathRefusal(src)
		switch {
		case outside != "" && why != "":
			why = outside + "; besides, " + why
		case outside != "":
			why = outside
		case why == "":
			why = bindSourceRefusal(c, s.Annotations, src, -1, c.findChannel)
		}
		if why == "" {
			plain := !(c.Profile.IsWorkspace(*m) && c.Profile.WorkspaceModeOf() != WorkspaceReadonly)
			if real, err := c.resolve(src); err == nil {
				why = homePrivacyRefusal(c, canonicalRun(real), -1, plain)
			}
		}
		if why != "" && m.Destination == dockerInit {
			ds = append(ds, Decision{Rule: "host_mounts", Field: field, Action: Refused, Before: m.Source, Layer: LayerNone, Why: dockerInitWhy})
			continue
		}
		if why != "" {
			if !endsInRemedy(why) {
				why += "; remove this mount or bind a directory that holds only what the job needs"
			}
			ds = append(ds, Decision{Rule: "host_mounts", Field: field, Action: Refused,
				Before: m.Source, Layer: LayerNone, Why: why})
			continue
		}
		ds = append(ds, readOnlyBind(m, field))
		ds = append(ds, bindPropagation(m, field))
	}
	return ds
}

// endsInRemedy tells whether a refusal's last clause already says what
// to do ("...; bind a directory without it"), so that no second remedy is
// run into it.
func endsInRemedy(why string) bool {
	i := strings.LastIndex(why, "; ")
	return i >= 0 && (strings.HasPrefix(why[i+2:], "bind ") || strings.HasPrefix(why[i+2:], "remove "))
}

// dockerInit is where dockerd binds its init for `docker run --init`.
const dockerInit = "/sbin/docker-init"

// dockerInitWhy answers `docker run --init`, whose fix is in the image:
// widening bind_roots to the host's binaries would run a host program as
// the job's first process.
const dockerInitWhy = "docker run --init binds dockerd's init from the host's binaries, which no bind root holds and none should; " +
	"drop --init and put an init in the image (tini, dumb-init) as the command's first word"

// bindPropagation keeps every later mount below a bind source out of the
// container: a mount that arrives after create is never judged, and it
// need not be the host's. Below an engine's own files (a volume's data, a
// pod's directories) the engine mounts what its callers ask for (a
// volume's driver options) at any time, and a containerd client can make
// one below any directory on a shared mount: its next task's rootfs
// mounts bind that directory (joining its peer group) and mount another
// tenant's image or a host directory below it. So a bind that asks for the
// host's mounts (rslave, Kubernetes' HostToContainer) is private too.
func bindPropagation(m *rspec.Mount, field string) Decision {
	before := fmtList(m.Options)
	propagation := []string{"private", "rprivate", "slave", "rslave", "shared", "rshared"}
	d := Decision{Rule: "host_mounts", Field: field + " propagation", Action: Tightened, Before: before, Layer: LayerNone}
	switch {
	case hasOpt(m.Options, "slave") || hasOpt(m.Options, "rslave"):
		d.Why = "a mount made below the source later is never judged and need not be the host's (a containerd client's next task can make one below a shared directory): private; bind the directories themselves"
	case !hasOpt(m.Options, "rprivate"):
		d.Why = "a mount the host makes below the source later is never judged: private"
	default:
		d.Action, d.After, d.Why = Kept, before, "a mount the host makes below the source later does not reach the container"
		return d
	}
	m.Options = append(withoutOpts(m.Options, propagation...), "rprivate")
	d.After = fmtList(m.Options)
	return d
}

// loosening are the options that undo ro, nosuid or nodev; the recursive
// ones (runc's mount_setattr attributes) are applied after the plain flags.
var loosening = []string{"rw", "suid", "dev", "rrw", "rsuid", "rdev"}

// readOnlyBind makes a bind read-only and strips setuid and device files.
// Loosening options are removed, not just overridden, because runc applies
// mount options in order and a later one would win.
func readOnlyBind(m *rspec.Mount, field string) Decision {
	before := fmtList(m.Options)
	opts := withoutOpts(m.Options, append(loosening, "ro", "nosuid", "nodev")...)
	opts = append(opts, "ro", "nosuid", "nodev")
	d := Decision{Rule: "host_mounts", Field: field, Action: Kept, Before: m.Source + " " + before,
		After: m.Source + " " + fmtList(opts), Layer: LayerMountFlags,
		Why: "host files are visible read-only (EROFS), without setuid or device files"}
	if len(withoutOpts(m.Options, loosening...)) != len(m.Options) ||
		!hasOpt(m.Options, "ro") || !hasOpt(m.Options, "nosuid") || !hasOpt(m.Options, "nodev") {
		d.Action = Tightened
	}
	m.Options = opts
	return d
}

// hostPathRefusal says why a bind source must not reach the sandbox, or ""
// when it may be bound read-only. Both the path the caller wrote and the
// path its symlinks resolve to must pass: a link named like a harmless
// directory may point at docker.sock.
func hostPathRefusal(src string) string {
	clean := filepath.Clean(src)
	candidates := []string{clean}
	// Resolved as written, as the kernel does: a ".." after a link leaves
	// the link's target, not the link's directory (rootlink/.. is / when
	// rootlink leads to /root), which cleaning first would hide.
	real, err := resolveHost(src)
	if err != nil {
		return "the source cannot be resolved on the host (" + err.Error() + ")"
	}
	if real != clean {
		candidates = append(candidates, real)
	}
	for _, p := range candidates {
		if why := lexicalRefusals(p); why != "" {
			if p != clean {
				why = src + " resolves to " + p + ": " + why
			}
			return why
		}
	}
	if fi, err := os.Stat(real); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return "a host socket is a channel to a service outside the sandbox"
	}
	return ""
}

// resolveHost follows the source's symlinks on the host. A link whose
// target does not exist (yet) is followed lexically rather than trusted:
// docker.sock may appear before runc mounts it. A link that cannot be
// read (such as /proc/1/root) is an error: the target is unknown.
func resolveHost(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return securejoin.SecureJoin("/", p)
}

// canonicalRun folds /var/run onto /run, which it links to on every
// current distribution, so that one list covers both spellings of a path
// that does not exist here.
func canonicalRun(p string) string {
	if rest, ok := strings.CutPrefix(p, "/var/run"); ok && (rest == "" || rest[0] == '/') {
		return "/run" + rest
	}
	return p
}

// hostTrees are host directories whose content, or any part of it, gives
// control of the host.
var hostTrees = []string{"/proc", "/sys", "/dev"}

// stateDirs hold engine state: sockets, other containers' filesystems and
// configuration. Binding one, or a directory above one, is refused; below
// one only the per-container files in engineOwnFiles are allowed.
var stateDirs = []string{
	"/run/docker", "/var/lib/docker", "/run/containerd", "/var/lib/containerd",
	"/run/crio", "/var/lib/containers", "/run/containers", "/run/podman",
	"/run/buildkit", "/var/lib/buildkit", "/var/lib/kubelet", "/etc/kubernetes",
	"/run/user", "/run/bulkhead",
}

// engineOwnFiles are what engines bind into their own containers: hosts,
// resolv.conf, hostname, /dev/shm, volumes and service-account tokens.
// The group named owner is whose they are: a file of another container,
// sandbox or pod is refused (see engineOwnFile). Compiled on first use,
// by a create that binds a host path, not by every bulkhead process.
var engineOwnFiles = sync.OnceValue(func() []engineFilePattern {
	return []engineFilePattern{
		{"docker", regexp.MustCompile(`^/var/lib/docker/containers/(?P<container>[0-9a-f]+)/(hosts|hostname|resolv\.conf|mounts/.+)$`)},
		{"docker", regexp.MustCompile(`^/var/lib/docker/volumes/[^/]+/_data(/.*)?$`)},
		{"containerd", regexp.MustCompile(`^/(var/lib|run)/containerd/io\.containerd\.grpc\.v1\.cri/sandboxes/(?P<sandbox>[0-9a-f]+)/.+$`)},
		{"containerd", regexp.MustCompile(`^/(var/lib|run)/containerd/io\.containerd\.grpc\.v1\.cri/containers/(?P<container>[0-9a-f]+)/.+$`)},
		// containerd 2's image volumes: <state>/image-volumes/<pod sandbox>/<image>.
		{"containerd", regexp.MustCompile(`^/(var/lib|run)/containerd/io\.containerd\.grpc\.v1\.cri/image-volumes/(?P<sandbox>[0-9a-f]+)/[0-9a-f]+(/.*)?$`)},
		{"crio", regexp.MustCompile(`^/(var/lib|run)/containers/storage/overlay-containers/(?P<container>[0-9a-f]+)/userdata/.+$`)},
		{"crio", regexp.MustCompile(`^/var/lib/containers/storage/volumes/[^/]+/_data(/.*)?$`)},
		{"kubelet", regexp.MustCompile(`^/var/lib/kubelet/pods/(?P<pod>[^/]+)/(volumes|volume-subpaths|containers|etc-hosts)(/.*)?$`)},
	}
})

// engineFilePattern is one of engineOwnFiles, with the engine that makes
// such files.
type engineFilePattern struct {
	engine string
	re     *regexp.Regexp
}

// engineFile is whose per-container file a path is: the owner's kind
// (container, sandbox, pod; "" for a volume, shared by name), its id, and
// the engine that made it.
type engineFile struct {
	Kind, ID, Engine string
}

var engineSocket = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(docker|containerd|crio|podman|buildkitd|cri-dockerd|dockershim|kubelet)\.sock(\.ttrpc)?$`)
})

// privateTmp matches systemd's PrivateTmp directories of services, which
// are 0700 root's above a 1777 tmp: a bind shows the job a service's
// temporary files, past the directory that keeps every local user out.
var privateTmp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/(var/)?tmp/systemd-private-[^/]+(/.*)?$`) })

// sshAgent matches OpenSSH's default agent socket, /tmp/ssh-XXXX/agent.PID.
var sshAgent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/tmp/ssh-[^/]+(/agent\.[^/]*)?$`) })

// credentialDirs are component sequences that name credentials wherever
// they appear in a path. Binding a directory that ends in a prefix of one
// (such as ~/.config) binds the credentials below it too.
var credentialDirs = [][]string{
	{".ssh"}, {".aws"}, {".kube"}, {".gnupg"}, {".docker"}, {".azure"}, {".netrc"},
	{".config", "gcloud"}, {".config", "gh"}, {".git-credentials"}, {".password-store"},
	{".pypirc"}, {".cargo", "credentials"}, {".cargo", "credentials.toml"}, {".gem", "credentials"},
	{".vault-token"}, {".pgpass"}, {".terraform.d", "credentials.tfrc.json"},
}

// CredentialEntryIn names the credential file or directory found at the
// top of dir ("" for none): a tree holding one is a home directory,
// wherever it lives and whatever /etc/passwd says.
func CredentialEntryIn(dir string) string {
	for _, cred := range credentialDirs {
		name := filepath.Join(append([]string{dir}, cred...)...)
		if _, err := os.Lstat(name); err == nil {
			return strings.Join(cred, "/")
		}
	}
	return ""
}

func lexicalRefusal(p string) string {
	if p == "/" {
		return "host / exposes every host file"
	}
	for _, t := range hostTrees {
		if under(p, t) {
			return "host " + t + " gives access to the host kernel, processes or devices"
		}
	}
	if engineSocket().MatchString(path.Base(p)) {
		return path.Base(p) + " is a container engine socket: whoever holds it controls the host"
	}
	if sshAgent().MatchString(p) || p == "/tmp" {
		return "host /tmp holds SSH agent sockets, which let the job sign in as the operator"
	}
	if privateTmp().MatchString(p) {
		return p + " is a service's private /tmp (systemd PrivateTmp), which systemd keeps from every other user"
	}
	if slices.Contains(homeParents(), p) || namedHome(p) == p {
		return p + " is a home directory, full of the owner's credentials and history"
	}
	if h := homeOfAUser(p, knownHomes()); h != "" {
		return p + " is or holds " + h + ", a user's home directory (/etc/passwd), full of the owner's credentials and history"
	}
	if c := credentialIn(p); c != "" {
		return c + " holds credentials"
	}
	for _, d := range stateDirs {
		if under(d, p) {
			return p + " is or contains engine state " + d
		}
		if under(p, d) && !engineOwnFile(p) {
			return p + " is engine state under " + d + ", not a per-container file the engine made for this container"
		}
	}
	return ""
}

// engineOwnFile tells whether p is a file an engine made for a container,
// without asking whose (the lexical denylist's view).
func engineOwnFile(p string) bool {
	_, ok := engineFileOwner(p)
	return ok
}

// engineFileOwner returns whose per-container file p is and whether it
// is one at all.
func engineFileOwner(p string) (engineFile, bool) {
	for _, f := range engineOwnFiles() {
		m := f.re.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		for i, name := range f.re.SubexpNames() {
			if name != "" {
				return engineFile{Kind: name, ID: m[i], Engine: f.engine}, true
			}
		}
		return engineFile{Engine: f.engine}, true
	}
	return engineFile{}, false
}

// ownedByThisContainer: the engine's file (at real, on the host) belongs
// to this container, its pod sandbox (by the CRI annotations) or its pod:
// the kubelet's files of a pod uid are a CRI container's whose own
// sandbox a CRI engine made for that pod (KubeletPod), never a caller's
// for naming the uid in an annotation. A container's own files are its
// engine's for a container of the same id that this engine made: ids are
// an engine's and a namespace's, so a client of another containerd, or
// of another namespace, names one of Docker's or CRI's at will.
func ownedByThisContainer(c *Context, s map[string]string, f engineFile, real string) bool {
	switch f.Kind {
	case "":
		return true
	case "container":
		if c.ID == "" || f.ID != c.ID {
			return false
		}
		switch f.Engine {
		case "docker":
			return c.engineTask(f.Engine, real)
		case "containerd":
			return madeByCRI(c) && c.engineTask(f.Engine, real)
		}
		// CRI-O's bundle is the container's own userdata directory.
		return madeByCRI(c)
	case "sandbox":
		// A CRI sandbox's files (its hosts, resolv.conf, /dev/shm) are
		// the pod's only where a CRI engine made the pod: a caller that
		// picks ids and annotations makes no CRI sandbox.
		if s[AnnotationCRIContainerType] == "sandbox" {
			return c.ID != "" && f.ID == c.ID && madeByCRI(c)
		}
		return f.ID == s[AnnotationCRISandboxID] && c.JoinableSandbox != nil && c.JoinableSandbox(f.ID) &&
			c.KubeletPod != nil && c.KubeletPod(s["io.kubernetes.cri.sandbox-uid"]) && madeByCRI(c)
	case "pod":
		return f.ID != "" && f.ID == s["io.kubernetes.cri.sandbox-uid"] && s[AnnotationCRIContainerType] == "container" &&
			c.KubeletPod != nil && c.KubeletPod(f.ID) && madeByCRI(c)
	}
	return false
}

// madeByCRI tells whether a CRI engine made this container's own bundle:
// a pod's files go to the pod's containers, and a client that names the
// pod's sandbox and uid in annotations of a task of its own is none.
func madeByCRI(c *Context) bool { return c.MadeByCRI != nil && c.MadeByCRI() }

func credentialIn(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for _, cred := range credentialDirs {
		for i := range parts {
			n := 0
			for n < len(cred) && i+n < len(parts) && parts[i+n] == cred[n] {
				n++
			}
			if n == len(cred) || (n > 0 && i+n == len(parts)) {
				return strings.Join(cred, "/")
			}
		}
	}
	return ""
}

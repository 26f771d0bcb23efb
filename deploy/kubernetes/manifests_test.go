// Package kubernetes holds bulkhead's Kubernetes manifests; its test decodes
// them strictly into k8s.io/api types (an unknown or misspelt field fails)
// and checks they agree with each other and with `bulkhead install
// containerd`.
package kubernetes

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// installHandler is the default handler name of `bulkhead install
// containerd` (cmd/bulkhead/cmd_install_containerd.go).
const installHandler = "bulkhead"

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// decode reads one document strictly into v after checking its kind.
func decode(t *testing.T, doc []byte, apiVersion, kind string, v any) {
	t.Helper()
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.APIVersion != apiVersion || meta.Kind != kind {
		t.Fatalf("document is %s %s, want %s %s", meta.APIVersion, meta.Kind, apiVersion, kind)
	}
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

func runtimeClass(t *testing.T) *nodev1.RuntimeClass {
	t.Helper()
	docs := documents(t, "runtimeclass.yaml")
	if len(docs) != 1 {
		t.Fatalf("runtimeclass.yaml has %d documents", len(docs))
	}
	var rc nodev1.RuntimeClass
	decode(t, docs[0], "node.k8s.io/v1", "RuntimeClass", &rc)
	return &rc
}

type installer struct {
	ns  corev1.Namespace
	sa  corev1.ServiceAccount
	cm  corev1.ConfigMap
	ds  appsv1.DaemonSet
	all int
}

func nodeInstaller(t *testing.T) *installer {
	t.Helper()
	docs := documents(t, "node-installer.yaml")
	if len(docs) != 4 {
		t.Fatalf("node-installer.yaml has %d documents, want Namespace, ServiceAccount, ConfigMap, DaemonSet", len(docs))
	}
	in := &installer{all: len(docs)}
	decode(t, docs[0], "v1", "Namespace", &in.ns)
	decode(t, docs[1], "v1", "ServiceAccount", &in.sa)
	decode(t, docs[2], "v1", "ConfigMap", &in.cm)
	decode(t, docs[3], "apps/v1", "DaemonSet", &in.ds)
	return in
}

func TestRuntimeClass(t *testing.T) {
	rc := runtimeClass(t)
	if rc.Name != "bulkhead" || rc.Handler != installHandler {
		t.Errorf("RuntimeClass %q handler %q, want bulkhead / %q", rc.Name, rc.Handler, installHandler)
	}
	if rc.Overhead == nil {
		t.Fatal("no overhead: the shim's memory would be unaccounted")
	}
	for name, min := range map[corev1.ResourceName]string{corev1.ResourceMemory: "16Mi", corev1.ResourceCPU: "10m"} {
		q, ok := rc.Overhead.PodFixed[name]
		if !ok || q.Cmp(resource.MustParse(min)) < 0 {
			t.Errorf("overhead %s = %v, want at least %s", name, q.String(), min)
		}
	}
	if rc.Scheduling == nil || rc.Scheduling.NodeSelector["bulkhead.dev/runtime"] != "true" {
		t.Errorf("scheduling.nodeSelector = %v, want bulkhead.dev/runtime=true", rc.Scheduling)
	}
}

func TestNodeInstaller(t *testing.T) {
	in := nodeInstaller(t)
	rc := runtimeClass(t)
	ds := &in.ds
	if in.sa.Namespace != in.ns.Name || in.cm.Namespace != in.ns.Name || ds.Namespace != in.ns.Name {
		t.Errorf("objects outside namespace %s", in.ns.Name)
	}
	spec := ds.Spec.Template.Spec
	// The installer runs exactly where the RuntimeClass schedules pods.
	for k, v := range rc.Scheduling.NodeSelector {
		if spec.NodeSelector[k] != v {
			t.Errorf("DaemonSet nodeSelector %v lacks the RuntimeClass's %s=%s", spec.NodeSelector, k, v)
		}
	}
	if spec.ServiceAccountName != in.sa.Name {
		t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, in.sa.Name)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the installer needs no API token; do not mount one")
	}
	if !spec.HostPID {
		t.Error("hostPID is needed to restart the node's containerd through nsenter -t 1")
	}
	sel := ds.Spec.Selector.MatchLabels
	for k, v := range sel {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the template's labels", k, v)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers, want the install one", len(spec.InitContainers))
	}
	install := spec.InitContainers[0]
	if install.SecurityContext == nil || install.SecurityContext.Privileged == nil || !*install.SecurityContext.Privileged {
		t.Error("the install container must be privileged (nsenter into the node)")
	}
	script := ""
	for _, arg := range install.Command {
		if strings.HasPrefix(arg, "/scripts/") {
			script = strings.TrimPrefix(arg, "/scripts/")
		}
	}
	body, ok := in.cm.Data[script]
	if !ok {
		t.Fatalf("install runs /scripts/%s, which the ConfigMap does not hold (%v)", script, in.cm.Data)
	}
	for _, want := range []string{"bulkhead\" install containerd --config", "containerd-shim-bulkhead-v2", "/host/etc/containerd/config.toml", "systemctl restart containerd"} {
		if !strings.Contains(body, want) {
			t.Errorf("install script lacks %q", want)
		}
	}
	if out, err := exec.Command("bash", "-n", "-c", body).CombinedOutput(); err != nil {
		t.Errorf("install script: bash -n: %v\n%s", err, out)
	}
	mounts := map[string]string{}
	for _, m := range install.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Errorf("mount %s names no volume", m.Name)
			continue
		}
		if v.HostPath != nil {
			mounts[m.MountPath] = v.HostPath.Path
		}
	}
	for inPod, onNode := range map[string]string{"/host/usr/local/bin": "/usr/local/bin", "/host/etc/containerd": "/etc/containerd"} {
		if mounts[inPod] != onNode {
			t.Errorf("%s mounts %q, want the node's %s", inPod, mounts[inPod], onNode)
		}
	}
	if cmv := volumes["scripts"]; cmv.ConfigMap == nil || cmv.ConfigMap.Name != in.cm.Name {
		t.Errorf("scripts volume is not ConfigMap %s", in.cm.Name)
	}
	// The long-running container holds no privilege at all.
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || (sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s is not unprivileged: %+v", c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s has no memory limit", c.Name)
		}
		if c.Image != install.Image {
			t.Errorf("container %s image %s, install image %s", c.Name, c.Image, install.Image)
		}
	}
}

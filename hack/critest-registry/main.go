// critest-registry serves the images Kubernetes' CRI validation suite
// (critest) pulls, built on this machine from local directories, from an
// in-memory OCI registry on a loopback address. No registry outside is
// reachable here; containerd's registry host configuration sends
// gcr.io, registry.k8s.io and k8s.gcr.io to this one.
//
// Usage: critest-registry -addr 127.0.0.1:5000 -images FILE
//
// FILE has one image a line: `repository:tag rootfs-dir [key=value...]`
// with keys user, workdir, cmd (comma-separated argv) and env
// (comma-separated), and `repository:tag same-as other:tag` for another
// tag of an already listed image. Once every image is stored the tool
// prints "ready" on stdout and serves until it is killed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "loopback address to serve on")
	list := flag.String("images", "", "file listing the images")
	flag.Parse()
	if *list == "" {
		log.Fatal("critest-registry: -images is required")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("critest-registry: %v", err)
	}
	go func() {
		log.Fatal(http.Serve(ln, registry.New(registry.Logger(log.New(os.Stderr, "", log.LstdFlags)))))
	}()
	if err := store(*addr, *list); err != nil {
		log.Fatalf("critest-registry: %v", err)
	}
	fmt.Println("ready")
	select {}
}

func store(addr, list string) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	defer f.Close()
	built := map[string]v1.Image{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 2 {
			return fmt.Errorf("%q: want repository:tag and a rootfs directory", sc.Text())
		}
		var img v1.Image
		if fields[1] == "same-as" && len(fields) == 3 {
			if img = built[fields[2]]; img == nil {
				return fmt.Errorf("%s: %s is not listed above", fields[0], fields[2])
			}
		} else if img, err = build(fields[1], fields[2:]); err != nil {
			return fmt.Errorf("%s: %w", fields[0], err)
		}
		built[fields[0]] = img
		ref, err := name.ParseReference(addr+"/"+fields[0], name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("%s: %w", fields[0], err)
		}
	}
	return sc.Err()
}

// build makes a one-layer linux/amd64 image of dir with the config keys.
func build(dir string, keys []string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (rc readCloser, err error) { return tarDir(dir) })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, kv := range keys {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q is no key=value", kv)
		}
		switch k {
		case "user":
			cf.Config.User = v
		case "workdir":
			cf.Config.WorkingDir = v
		case "cmd":
			cf.Config.Cmd = strings.Split(v, ",")
		case "env":
			cf.Config.Env = append(cf.Config.Env, strings.Split(v, ",")...)
		default:
			return nil, fmt.Errorf("unknown key %q", k)
		}
	}
	return mutate.ConfigFile(img, cf)
}

package ctrtest

import (
	"context"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// Client is the daemon's Go client, as an engine speaks to containerd,
// with a context in the test namespace that ends after timeout and the
// test image; both end with the test.
func (d *Daemon) Client(t *testing.T, timeout time.Duration) (context.Context, *containerd.Client, containerd.Image) {
	t.Helper()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), Namespace), timeout)
	t.Cleanup(cancel)
	client, err := containerd.New(d.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	img, err := client.GetImage(ctx, Image)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, client, img
}

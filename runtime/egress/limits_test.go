package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The byte budget is exact: the broker carries egress_bytes in all and
// not one byte more, whether one connection spends it or several at once.
func TestBrokerByteBudgetExact(t *testing.T) {
	const budget = 1 << 20
	big := strings.Repeat("x", 4<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dest := fmt.Sprintf("127.0.0.1:%d", port)

	carried := func(t *testing.T, b *Broker, lines []Connection, got int64) {
		t.Helper()
		var total int64
		for _, l := range lines {
			total += l.Sent + l.Received
		}
		if used := b.used.Load(); used != budget || total != budget {
			t.Errorf("used %d, audit lines add up to %d bytes, want both exactly %d", used, total, budget)
		}
		if got > budget {
			t.Errorf("the job got %d bytes through a %d-byte budget", got, budget)
		}
	}

	t.Run("plain HTTP", func(t *testing.T) {
		var b *Broker
		proxy, audit := testBroker(t, []string{dest}, nil, func(br *Broker) { br.MaxBytes = budget; b = br })
		var got int64
		resp, err := proxyClient(proxy).Get("http://" + dest + "/")
		if err == nil {
			got, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		carried(t, b, waitLines(t, audit, 1), got)
	})

	t.Run("tunnels at once", func(t *testing.T) {
		const tunnels = 4
		var b *Broker
		proxy, audit := testBroker(t, []string{dest}, nil, func(br *Broker) { br.MaxBytes = budget; b = br })
		var wg sync.WaitGroup
		gots := make([]int64, tunnels)
		for i := range tunnels {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", proxy)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET / HTTP/1.0\r\nHost: %s\r\n\r\n", dest, dest, dest)
				all, _ := io.ReadAll(conn)
				// A tunnel opened after the budget ran out is refused;
				// the broker's own answers are not carried bytes.
				if answer := "HTTP/1.1 200 Connection established\r\n\r\n"; strings.HasPrefix(string(all), answer) {
					gots[i] = int64(len(all) - len(answer))
				}
			}()
		}
		wg.Wait()
		var got int64
		for _, n := range gots {
			got += n
		}
		carried(t, b, waitLines(t, audit, tunnels), got)
	})
}

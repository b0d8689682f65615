package lake_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/schemas"
)

// faultyProxy sits between the S3 client and the server. On a fraction `rate` of requests it answers 503
// without forwarding, forwards and then answers 500 (the operation happened but its reply is lost), or
// drops the connection before forwarding or halfway through the forwarded response. With corruptParts,
// the first complete GET response of each .parquet object has one byte flipped (and its checksum headers
// removed, as from a server that sends none), so only the lake's own sha256 check can catch it.
type faultyProxy struct {
	target       string
	rate         float64
	corruptParts bool

	mu        sync.Mutex
	rng       *rand.Rand
	corrupted map[string]bool

	faults, flips, requests atomic.Int64
	transport               *http.Transport
}

func startFaultyProxy(t *testing.T, target string, rate float64, corruptParts bool) *faultyProxy {
	p := &faultyProxy{target: target, rate: rate, corruptParts: corruptParts, rng: rand.New(rand.NewPCG(1, 2)),
		corrupted: map[string]bool{}, transport: &http.Transport{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	t.Cleanup(p.transport.CloseIdleConnections)
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	return p
}

const (
	faultNone = iota
	fault503Before
	fault500After
	faultDropBefore
	faultDropAfter
)

func (p *faultyProxy) roll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rng.Float64() >= p.rate {
		return faultNone
	}
	return 1 + p.rng.IntN(4)
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	fault := p.roll()
	if fault != faultNone {
		p.faults.Add(1)
	}
	switch fault {
	case fault503Before:
		io.Copy(io.Discard, r.Body)
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown")
		return
	case faultDropBefore:
		io.Copy(io.Discard, r.Body)
		dropConnection(w, nil)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		writeS3Error(w, http.StatusBadGateway, "ProxyError")
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // the signature covers the Host the client used
	out.ContentLength = r.ContentLength
	out.TransferEncoding = r.TransferEncoding
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		writeS3Error(w, http.StatusBadGateway, "ProxyError")
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		writeS3Error(w, http.StatusBadGateway, "ProxyError")
		return
	}
	switch fault {
	case fault500After:
		writeS3Error(w, http.StatusInternalServerError, "InternalError")
		return
	case faultDropAfter:
		dropConnection(w, func(bw *bufio.ReadWriter) {
			fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n", resp.StatusCode, http.StatusText(resp.StatusCode), len(body))
			bw.Write(body[:len(body)/2])
		})
		return
	}
	if p.corruptParts && r.Method == http.MethodGet && resp.StatusCode == http.StatusOK &&
		strings.HasSuffix(r.URL.Path, ".parquet") && len(body) > 0 {
		p.mu.Lock()
		flip := !p.corrupted[r.URL.Path]
		p.corrupted[r.URL.Path] = true
		p.mu.Unlock()
		if flip {
			body[len(body)/2] ^= 0x5a
			for h := range resp.Header {
				if strings.HasPrefix(strings.ToLower(h), "x-amz-checksum") {
					resp.Header.Del(h)
				}
			}
			p.flips.Add(1)
		}
	}
	for h, vs := range resp.Header {
		w.Header()[h] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

func writeS3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the test proxy</Message></Error>`, code)
}

// dropConnection takes over the connection, writes what partial writes, and closes it.
func dropConnection(w http.ResponseWriter, partial func(*bufio.ReadWriter)) {
	conn, bw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if partial != nil {
		partial(bw)
		bw.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// TestS3RetryThroughFaultyProxyConformance runs the whole suite through a proxy that fails about 10% of
// requests and corrupts the first download of every part: the Retry wrapper and the verified cache must
// make every write commit correctly and every read return the committed rows.
func TestS3RetryThroughFaultyProxyConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole conformance suite again through a faulty proxy; skipped with -short")
	}
	endpoint, bucket := s3test.Start(t)
	p := startFaultyProxy(t, endpoint, 0.10, true)
	runConformance(t, s3Lakes(bucket, true))
	t.Logf("proxy: %d requests, %d faults injected, %d bodies corrupted", p.requests.Load(), p.faults.Load(), p.flips.Load())
	if p.faults.Load() == 0 || p.flips.Load() == 0 {
		t.Fatalf("the proxy injected %d faults and %d corruptions: the test exercised nothing", p.faults.Load(), p.flips.Load())
	}
}

// TestS3CorruptDownloadIsFetchedAgain checks that a flipped byte in a downloaded part is caught by the
// sha256 check, fetched again, and that a second read downloads nothing.
func TestS3CorruptDownloadIsFetchedAgain(t *testing.T) {
	ctx := context.Background()
	endpoint, bucket := s3test.Start(t)
	p := startFaultyProxy(t, endpoint, 0, true)
	lk, _ := s3Lakes(bucket, true)(t)
	key := lake.PartitionKey{Run: "r1", Table: "turns", Step: 1}
	rows := turnRows(3000, 11, "")
	if _, err := commit(ctx, lk, key, rows, lake.WriteOptions{ChunkRows: 1000}, false); err != nil {
		t.Fatal(err)
	}
	reader := lake.New(lk.Store(), lake.NewCache(t.TempDir()))
	got, err := lake.ReadRows[schemas.TurnRow](ctx, reader, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatal("rows read through a corrupting proxy differ from those written")
	}
	m, _ := reader.Manifest(ctx, key)
	if p.flips.Load() != 3 || reader.Cache().Mismatches() != 3 {
		t.Fatalf("proxy corrupted %d downloads, cache caught %d, want 3 and 3", p.flips.Load(), reader.Cache().Mismatches())
	}
	if want := 2 * m.Bytes; reader.Cache().BytesDownloaded() != want {
		t.Fatalf("downloaded %d bytes, want %d (each part twice)", reader.Cache().BytesDownloaded(), want)
	}
	before := reader.Cache().BytesDownloaded()
	if _, err := lake.ReadRows[schemas.TurnRow](ctx, reader, key); err != nil {
		t.Fatal(err)
	}
	files, err := reader.LocalFiles(ctx, "r1", "turns")
	if err != nil || len(files) != 3 {
		t.Fatalf("LocalFiles = %v, %v", files, err)
	}
	if after := reader.Cache().BytesDownloaded(); after != before {
		t.Fatalf("a second read downloaded %d bytes, want 0", after-before)
	}
}

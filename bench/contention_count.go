package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// requestCounts counts the HTTP requests a P4 writer sends to the store, by
// kind and outcome. JSON field names are those of the report line.
type requestCounts struct {
	Puts    int64 `json:"puts"`    // conditional PUTs that created the object (200)
	Put412  int64 `json:"put_412"` // conditional PUTs that found it taken (412, 304): lost races
	Put409  int64 `json:"put_409"` // 409 ConditionalRequestConflict (retried by objectstore)
	Gets    int64 `json:"gets"`    // object GETs that read something
	Get404  int64 `json:"get_404"` // object GETs of a free version
	Lists   int64 `json:"lists"`   // ListObjectsV2 pages
	Other   int64 `json:"other"`   // anything else (HEAD, other statuses)
	CPUNs   int64 `json:"cpu_ns"`  // user+system CPU of the writer process, filled by the parent
	Commits int64 `json:"commits"` // commits these requests made
	Errors  int64 `json:"errors"`  // transport errors (no reply)
}

func (c *requestCounts) total() int64 {
	return c.Puts + c.Put412 + c.Put409 + c.Gets + c.Get404 + c.Lists + c.Other
}

func (c *requestCounts) addTo(sum *requestCounts) {
	sum.Puts += c.Puts
	sum.Put412 += c.Put412
	sum.Put409 += c.Put409
	sum.Gets += c.Gets
	sum.Get404 += c.Get404
	sum.Lists += c.Lists
	sum.Other += c.Other
	sum.CPUNs += c.CPUNs
	sum.Commits += c.Commits
	sum.Errors += c.Errors
}

// countingTransport is an http.RoundTripper that counts requests by kind
// and status in a requestCounts (with atomic adds: the SDK sends from many
// goroutines).
type countingTransport struct {
	next http.RoundTripper
	c    *requestCounts
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		atomic.AddInt64(&t.c.Errors, 1)
		return resp, err
	}
	st := resp.StatusCode
	var n *int64
	switch {
	case req.Method == http.MethodPut && req.Header.Get("If-None-Match") != "":
		switch {
		case st/100 == 2:
			n = &t.c.Puts
		case st == http.StatusPreconditionFailed || st == http.StatusNotModified:
			n = &t.c.Put412
		case st == http.StatusConflict:
			n = &t.c.Put409
		}
	case req.Method == http.MethodGet && isList(req):
		n = &t.c.Lists
	case req.Method == http.MethodGet && st/100 == 2:
		n = &t.c.Gets
	case req.Method == http.MethodGet && st == http.StatusNotFound:
		n = &t.c.Get404
	}
	if n == nil {
		n = &t.c.Other
	}
	atomic.AddInt64(n, 1)
	return resp, nil
}

// isList tells a ListObjectsV2 request (list-type=2 on the bucket, path
// style: "/bucket?list-type=2&prefix=...") from an object GET.
func isList(req *http.Request) bool {
	return req.URL.Query().Has("list-type") || strings.Contains(req.URL.RawQuery, "list-type") ||
		!strings.Contains(strings.Trim(req.URL.Path, "/"), "/")
}

// countingClient returns an HTTP client for objectstore.WithHTTPClient
// that counts into c.
func countingClient(c *requestCounts) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: countingTransport{next: tr, c: c}}
}

// ceilingLoop measures the store from one client: until half, conditional
// PUTs of fresh commit-sized keys (named after tag) one after another, then
// until end GETs of those keys in turn. It returns how many of each it did.
func ceilingLoop(ctx context.Context, s objectstore.Store, tag string, half, end time.Time) (puts, gets int64, err error) {
	data := []byte(strings.Repeat(`{"add":{"path":"part-00000.parquet","size":1024}}`+"\n", 12))
	key := func(n int64) string { return fmt.Sprintf("_delta_log/%s-%06d.json", tag, n) }
	for ; time.Now().Before(half); puts++ {
		if err := s.PutIfAbsent(ctx, key(puts), data); err != nil {
			return puts, gets, err
		}
	}
	for ; puts > 0 && time.Now().Before(end); gets++ {
		if _, err := s.Get(ctx, key(gets%puts), objectstore.FullObject); err != nil {
			return puts, gets, err
		}
	}
	return puts, gets, nil
}

// serverCeiling measures what the MinIO server serves on this machine:
// clients loops of ceilingLoop for d (PUTs for d/2, then GETs), each with
// its own S3 client, in processes of their own (env.ContentionChild, as
// P4's writers) or else as goroutines of this process. It returns
// conditional PUTs per second and GETs per second.
func serverCeiling(ctx context.Context, env *Env, clients int, d time.Duration) (putRate, getRate float64, err error) {
	prefix := uniquePrefix("p4-ceiling")
	var puts, gets atomic.Int64
	if env.ContentionChild != nil {
		s3 := env.S3
		jobs := make([]ContentionJob, clients)
		for i := range jobs {
			jobs[i] = ContentionJob{Endpoint: s3.Endpoint, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
				Bucket: s3.Bucket, Region: s3.Region, Prefix: prefix, Writer: i, CeilingNs: int64(d)}
		}
		reps, _, err := runWriters(ctx, env, jobs)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: P4 server ceiling: %w", err)
		}
		for _, r := range reps {
			puts.Add(r.Requests.Puts)
			gets.Add(r.Requests.Gets)
		}
	} else {
		stores := make([]objectstore.Store, clients)
		for i := range stores {
			s, err := env.S3.StoreAt(ctx, prefix)
			if err != nil {
				return 0, 0, err
			}
			stores[i] = s
		}
		errs := make([]error, clients)
		t0 := time.Now()
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				p, g, err := ceilingLoop(ctx, s, fmt.Sprintf("g%02d", i), t0.Add(d/2), t0.Add(d))
				puts.Add(p)
				gets.Add(g)
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, 0, fmt.Errorf("bench: P4 server ceiling: %w", err)
		}
	}
	half := (d / 2).Seconds()
	return float64(puts.Load()) / half, float64(gets.Load()) / half, nil
}

// commitCeiling is the commit rate a server with these PUT and GET rates
// (serverCeiling) allows at the requests per commit in c: each request
// takes the server 1/rate of its time (PUTs of any outcome and other
// requests at the PUT rate, GETs, 404s and LISTs at the GET rate).
func commitCeiling(c *requestCounts, putRate, getRate float64) float64 {
	if c.Commits == 0 || putRate <= 0 || getRate <= 0 {
		return 0
	}
	put := float64(c.Puts + c.Put412 + c.Put409 + c.Other)
	get := float64(c.Gets + c.Get404 + c.Lists)
	return float64(c.Commits) / (put/putRate + get/getRate)
}

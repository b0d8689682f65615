package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spadekit/spade/schemas"
)

// backend answers one encoded request for a role.
type backend interface {
	// complete returns the Outcome of the request; a Go error means the stage must stop.
	complete(ctx context.Context, kind callKind, req *Request, body []byte, hash string) (Outcome, error)
	// check verifies, before any work, that the role can be served, and says which server serves it
	// ("" when it cannot tell).
	check(ctx context.Context, role schemas.Role) (Server, error)
}

// httpBackend talks to the OpenAI-compatible servers of one role (its replicas, see balancer).
type httpBackend struct {
	settings RoleSettings
	client   *http.Client
	apiKey   string
	opts     Settings
	bal      *balancer
	// latency records the wall time of every attempt that got an answer.
	latency *latencies
}

// newHTTPTransport returns a transport that keeps enough idle connections for maxInFlight calls.
func newHTTPTransport(maxInFlight int) *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxInFlight * 2,
		MaxIdleConnsPerHost: maxInFlight,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
}

func newHTTPBackend(rs RoleSettings, opts Settings, client *http.Client, lat *latencies) *httpBackend {
	key := ""
	if rs.APIKeyEnv != "" {
		key = os.Getenv(rs.APIKeyEnv)
	}
	urls := SplitBaseURLs(rs.BaseURL)
	if len(urls) == 0 {
		urls = []string{""} // check names the missing setting
	}
	return &httpBackend{settings: rs, client: client, apiKey: key, opts: opts, bal: newBalancer(urls, opts.ServerMaxInFlight), latency: lat}
}

// endpoint returns path under a replica's /v1 root.
func endpoint(base, path string) string {
	return strings.TrimRight(base, "/") + path
}

// attemptResult is the classification of one HTTP attempt.
type attemptResult struct {
	out       Outcome
	failure   string        // non-empty: this attempt failed for this reason
	retryable bool          // the failure may go away on retry
	retryWait time.Duration // server's Retry-After, if any
	// busy is a 429 or 503: the server is up but overloaded, so the call waits (Retry-After) and stays
	// on its replica rather than taking the replica out.
	busy bool
}

// complete sends the call to its replica (the play's, else the least loaded), within that server's
// in-flight limit, and retries a retryable failure: a busy server (429, 503) after its Retry-After (or
// the backoff), on the same replica; any other retryable failure at once on another replica when there
// is one up (the failed one is taken out, see balancer.fail), else after the backoff.
func (b *httpBackend) complete(ctx context.Context, kind callKind, req *Request, body []byte, _ string) (Outcome, error) {
	start := time.Now()
	session := sessionOf(ctx)
	var res attemptResult
	attempts := 0
	for {
		attempts++
		r, done := b.bal.pick(session)
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			done()
			return Outcome{}, ctx.Err()
		}
		r.calls.Add(1)
		t0 := time.Now()
		res = b.attempt(ctx, kind, r.url, body)
		if res.failure == "" || !res.retryable {
			b.latency.add(time.Since(t0))
		}
		<-r.slots
		done()
		if err := ctx.Err(); err != nil {
			return Outcome{}, err
		}
		if res.failure == "" || !res.retryable || attempts > b.opts.MaxRetries {
			break
		}
		if !res.busy && b.bal.fail(r) {
			continue // another replica is up: the play moves there now
		}
		wait := RetryDelay(attempts, b.opts.BackoffBase, b.opts.BackoffMax, rand.Float64())
		if res.retryWait > 0 {
			wait = min(res.retryWait, b.opts.Timeout) // the server said when; an attempt's timeout caps it
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Outcome{}, ctx.Err()
		case <-t.C:
		}
	}
	out := res.out
	if res.failure != "" {
		out = Outcome{Err: res.failure}
		if res.retryable && attempts > 1 {
			out.Err = fmt.Sprintf("%s (gave up after %d attempts)", res.failure, attempts)
		}
	}
	out.Attempts = attempts
	out.LatencyMS = time.Since(start).Milliseconds()
	return out, nil
}

// kindURL returns the URL a call of the kind is posted to: /chat/completions and /completions under the
// /v1 root, and vLLM's /tokenize at the server root (the base URL without its /v1).
func kindURL(base string, kind callKind) string {
	switch kind {
	case kindCompletion:
		return endpoint(base, "/completions")
	case kindTokenize:
		return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1") + "/tokenize"
	case kindGenerate:
		return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1") + "/generate"
	}
	return endpoint(base, "/chat/completions")
}

// attempt makes one HTTP request and classifies its result.
func (b *httpBackend) attempt(ctx context.Context, kind callKind, base string, body []byte) attemptResult {
	actx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, kindURL(base, kind), bytes.NewReader(body))
	if err != nil {
		return attemptResult{failure: "build request: " + err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if b.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := b.client.Do(hreq)
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return attemptResult{failure: fmt.Sprintf("timeout: no response within %s", b.opts.Timeout)}
		}
		return attemptResult{failure: "connection: " + err.Error(), retryable: true}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, b.opts.MaxResponseBytes+1))
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return attemptResult{failure: fmt.Sprintf("timeout: response not complete within %s", b.opts.Timeout)}
		}
		return attemptResult{failure: "read response: " + err.Error(), retryable: true}
	}
	if resp.StatusCode != http.StatusOK {
		res := attemptResult{
			failure:   fmt.Sprintf("HTTP %d: %s", resp.StatusCode, prefix(string(raw), 300)),
			retryable: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			busy:      resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable,
		}
		res.retryWait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		return res
	}
	if int64(len(raw)) > b.opts.MaxResponseBytes {
		return attemptResult{failure: fmt.Sprintf("response larger than %d bytes", b.opts.MaxResponseBytes)}
	}
	return decodeResponse(kind, raw)
}

// retryAfter reads a Retry-After header: delay seconds, or an HTTP date (the wait until then); 0 when
// absent, invalid or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// decodeResponse parses a 200 body of a call of the kind; invalid UTF-8 and malformed JSON are failures,
// not retried.
func decodeResponse(kind callKind, raw []byte) attemptResult {
	if !utf8.Valid(raw) {
		return attemptResult{failure: "response is not valid UTF-8"}
	}
	var (
		out Outcome
		err error
	)
	switch kind {
	case kindCompletion:
		var body CompletionResponseBody
		if err = json.Unmarshal(raw, &body); err == nil {
			out, err = outcomeFromCompletion(&body)
		}
	case kindTokenize:
		var body TokenizeResponseBody
		if err = json.Unmarshal(raw, &body); err == nil {
			out, err = outcomeFromTokenize(&body)
		}
	case kindGenerate:
		var body GenerateResponseBody
		if err = json.Unmarshal(raw, &body); err == nil {
			out, err = outcomeFromGenerate(&body)
		}
	default:
		var body ChatResponseBody
		if err = json.Unmarshal(raw, &body); err == nil {
			out, err = outcomeFromBody(&body)
		}
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return attemptResult{failure: "decode response: " + err.Error()}
	}
	if err != nil {
		return attemptResult{failure: err.Error()}
	}
	return attemptResult{out: out}
}

// modelList is the body of GET /models.
type modelList struct {
	Data []struct {
		ID      string `json:"id"`
		OwnedBy string `json:"owned_by"`
	} `json:"data"`
}

// check verifies every replica of the role (checkReplica) and returns the first one's server.
func (b *httpBackend) check(ctx context.Context, role schemas.Role) (Server, error) {
	var first Server
	for i, r := range b.bal.replicas {
		server, err := b.checkReplica(ctx, role, r.url)
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = server
		}
	}
	return first, nil
}

// checkReplica verifies that the server at base answers GET /models and serves the role's model.
func (b *httpBackend) checkReplica(ctx context.Context, role schemas.Role, base string) (Server, error) {
	if base == "" {
		return "", fmt.Errorf("llm: %s: no base URL: set llm.%s.base_url or OPENAI_BASE_URL", role, role)
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return "", fmt.Errorf("llm: %s: base URL %q is neither http(s):// nor replay:<run>", role, base)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(cctx, http.MethodGet, endpoint(base, "/models"), nil)
	if err != nil {
		return "", fmt.Errorf("llm: %s: %w", role, err)
	}
	if b.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := b.client.Do(hreq)
	if err != nil {
		return "", fmt.Errorf("llm: %s: endpoint %s unreachable: %w (is the server running? check llm.%s.base_url)", role, base, err, role)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return "", fmt.Errorf("llm: %s: endpoint %s refused the API key (HTTP %d): set the variable named by llm.%s.api_key_env", role, base, resp.StatusCode, role)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("llm: %s: GET %s: HTTP %d: %s (is this an OpenAI-compatible /v1 root?)", role, endpoint(base, "/models"), resp.StatusCode, prefix(string(raw), 200))
	}
	var list modelList
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("llm: %s: GET %s: not a model list: %w", role, endpoint(base, "/models"), err)
	}
	served := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == b.settings.Model {
			return DetectServer(m.OwnedBy), nil
		}
		served = append(served, m.ID)
	}
	return "", fmt.Errorf("llm: %s: model %q is not served by %s (served: %s); set llm.%s.model", role, b.settings.Model, base, strings.Join(served, ", "), role)
}

// prefix returns at most n bytes of s, cut at a rune boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

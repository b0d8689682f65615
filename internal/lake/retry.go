package lake

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of a Retry store.
type RetryPolicy struct {
	// Attempts is the total number of tries per operation (>= 1).
	Attempts int
	// Base is the first backoff; each retry doubles it, with full jitter, up to Max.
	Base, Max time.Duration
}

// DefaultRetry is the policy Open uses for S3: 8 tries, 50 ms doubling to 2 s.
var DefaultRetry = RetryPolicy{Attempts: 8, Base: 50 * time.Millisecond, Max: 2 * time.Second}

// Retry wraps a Store and retries transient failures. ErrNotFound and ErrExists are answers, never
// retried. A PutIfAbsent whose reply was lost may have succeeded: when the retry finds the key existing
// with the same content, the put counts as done.
type Retry struct {
	inner  Store
	policy RetryPolicy
}

// WithRetry wraps s with the policy.
func WithRetry(s Store, p RetryPolicy) *Retry { return &Retry{inner: s, policy: p} }

// Unwrap returns the wrapped store.
func (r *Retry) Unwrap() Store { return r.inner }

// URI implements Store.
func (r *Retry) URI() string { return r.inner.URI() }

func (r *Retry) do(ctx context.Context, op func() error) error {
	var err error
	backoff := r.policy.Base
	for attempt := 1; ; attempt++ {
		err = op()
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || ctx.Err() != nil || attempt >= r.policy.Attempts {
			return err
		}
		sleep := time.Duration(rand.Int64N(int64(backoff) + 1))
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, r.policy.Max)
	}
}

// Get implements Store. The whole body is read inside the retry, so a connection dropped mid-body (or a
// body the SDK's response checksum rejects, which it reports at the end) is fetched again from the
// start. Resuming from an offset instead would be unsafe for the one object that is replaced in place,
// the manifest: a resumed read could splice two versions. Bodies are bounded by the part size
// (WriteOptions.ChunkRows), so holding one in memory is fine.
func (r *Retry) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var body []byte
	err := r.do(ctx, func() error {
		rc, err := r.inner.Get(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		body, err = io.ReadAll(rc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytesReader(body)), nil
}

// Put implements Store.
func (r *Retry) Put(ctx context.Context, key string, body []byte) error {
	return r.do(ctx, func() error { return r.inner.Put(ctx, key, body) })
}

// PutIfAbsent implements Store.
func (r *Retry) PutIfAbsent(ctx context.Context, key string, body []byte) error {
	tried := false
	return r.do(ctx, func() error {
		err := r.inner.PutIfAbsent(ctx, key, body)
		if errors.Is(err, ErrExists) && tried {
			// Our earlier try may have landed before its reply was lost.
			if got, gerr := ReadAll(ctx, r.inner, key); gerr == nil && string(got) == string(body) {
				return nil
			}
		}
		tried = true
		return err
	})
}

// List implements Store.
func (r *Retry) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := r.do(ctx, func() error {
		var err error
		out, err = r.inner.List(ctx, prefix)
		return err
	})
	return out, err
}

// Delete implements Store.
func (r *Retry) Delete(ctx context.Context, key string) error {
	return r.do(ctx, func() error { return r.inner.Delete(ctx, key) })
}

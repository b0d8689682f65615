package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// multipartThreshold is the body size above which Put uses a multipart upload.
const multipartThreshold = 16 << 20

// S3 is a Store in an S3 bucket under a prefix, through aws-sdk-go-v2 with the standard credential chain.
// AWS_ENDPOINT_URL points it at any S3-compatible server, and then path-style addressing is used.
// PutIfAbsent is a conditional put (If-None-Match: *).
type S3 struct {
	client   *s3.Client
	uploader *manager.Uploader
	bucket   string
	prefix   string
	uri      string
}

// OpenS3 opens "s3://bucket/prefix". The region defaults to us-east-1 when none is configured.
func OpenS3(ctx context.Context, uri string) (*S3, error) {
	rest := strings.TrimPrefix(uri, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("lake: %q names no bucket (want s3://bucket/prefix)", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: s3 config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	pathStyle := os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		o.RetryMaxAttempts = 1 // retries are the job of the Retry wrapper, which knows what is idempotent
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &S3{client: client, uploader: manager.NewUploader(client), bucket: bucket, prefix: prefix, uri: uri}, nil
}

// URI implements Store.
func (s *S3) URI() string { return s.uri }

func (s *S3) key(k string) string { return s.prefix + k }

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, fmt.Errorf("lake: s3 get %s: %w", key, err)
	}
	return out.Body, nil
}

// Put implements Store; bodies above 16 MiB go up as multipart uploads.
func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	var err error
	if len(body) > multipartThreshold {
		_, err = s.uploader.Upload(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key)), Body: bytes.NewReader(body)})
	} else {
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key)),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	}
	if err != nil {
		return fmt.Errorf("lake: s3 put %s: %w", key, err)
	}
	return nil
}

// PutIfAbsent implements Store with If-None-Match: *.
func (s *S3) PutIfAbsent(ctx context.Context, key string, body []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key)),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*")})
	if err != nil {
		if isStatus(err, http.StatusPreconditionFailed) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("lake: s3 conditional put %s: %w", key, err)
	}
	return nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("lake: s3 list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, ObjectInfo{Key: strings.TrimPrefix(aws.ToString(o.Key), s.prefix), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("lake: s3 delete %s: %w", key, err)
	}
	return nil
}

// isStatus reports whether err is an HTTP response error with the given status code.
func isStatus(err error, code int) bool {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() == code {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch code {
		case http.StatusNotFound:
			return ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound"
		case http.StatusPreconditionFailed:
			return ae.ErrorCode() == "PreconditionFailed"
		}
	}
	return false
}

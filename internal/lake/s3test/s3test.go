// Package s3test starts a real S3-compatible server (versitygw) for tests. There is no stand-in: when the
// server cannot start, the test fails, because the S3 half of the lake is not optional: a lake on S3 must
// behave as a local one, and only a real server shows it.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// AccessKey and SecretKey are the root credentials the server is started with (and the SDK is given).
const (
	AccessKey = "spadetest"
	SecretKey = "spadetest-secret-key"
	// Region is the region the SDK is configured with; versitygw requires us-east-1.
	Region = "us-east-1"
)

// Binary returns the path of versitygw: ./bin/versitygw of the repository holding the working directory
// (found by walking up to go.mod), else the one on $PATH.
func Binary() (string, error) {
	dir, err := os.Getwd()
	if err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, "bin", "versitygw")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", errors.New("versitygw not found in ./bin or $PATH: run `make tools`")
	}
	return p, nil
}

// Start starts versitygw on a free loopback port with a fresh data directory, creates a bucket, points
// the AWS SDK at it through the environment (AWS_ENDPOINT_URL, credentials, region us-east-1) and stops
// the server when the test ends. It returns the endpoint URL ("http://127.0.0.1:PORT") and the bucket.
// A server that cannot start fails the test. The environment is set with t.Setenv, so the calling test
// cannot be parallel; child processes it starts inherit the settings.
func Start(t testing.TB) (endpoint, bucket string) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	root := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a freed port can be taken by someone else before we bind it
		endpoint, lastErr = start(t, bin, root)
		if lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("s3test: versitygw did not start: %v", lastErr)
	}
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(root, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(root, "no-aws-credentials"))
	bucket = "spade-test"
	client := Client(endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("s3test: create bucket: %v", err)
	}
	return endpoint, bucket
}

// Client returns an S3 client for the test server at endpoint (path-style, test credentials).
func Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

func start(t testing.TB, bin, root string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	var logs strings.Builder
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	cmd.Stdout = &logs
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	endpoint := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			break // any HTTP answer (403 without a signature) means it is serving
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("exited (%v): %s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return "", fmt.Errorf("not ready after 15s: %s", logs.String())
		}
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return endpoint, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

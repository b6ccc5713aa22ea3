//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ontoflow/ontoflow/internal/harness/s3test"
)

// s3Alone drives the S3 server of a -store versitygw run with the AWS SDK
// directly, no Ontoflow in between, on the same workloads as the WebDAV
// benchmarks: the ceiling S3 mode is measured against, so that the gap to
// POSIX mode splits into the S3 server's share and ours. The client is set
// up as S3 mode's is (unsigned payloads, no Expect: 100-continue, checksums
// only where required) so the two send the same requests.
type s3Alone struct {
	client *s3.Client
	bucket string
	pid    int // the S3 server's process
}

const s3AloneName = "S3 server alone"

func newS3Alone(gw *s3test.Server, pid int) *s3Alone {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = 128 })
	client := s3.New(s3.Options{
		Region:                       gw.Region,
		BaseEndpoint:                 aws.String(gw.Endpoint),
		UsePathStyle:                 true,
		HTTPClient:                   hc,
		Credentials:                  credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, ""),
		ContinueHeaderThresholdBytes: -1,
		RequestChecksumCalculation:   aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation:   aws.ResponseChecksumValidationWhenRequired,
	})
	return &s3Alone{client: client, bucket: gw.Bucket, pid: pid}
}

var unsignedPayload = s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)

func (a *s3Alone) putObject(ctx context.Context, key string, body []byte) error {
	_, err := a.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &a.bucket, Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
	}, unsignedPayload)
	if err != nil {
		return fmt.Errorf("%s: put %s: %w", s3AloneName, key, err)
	}
	return nil
}

// put stores body under key and returns MiB/s.
func (a *s3Alone) put(ctx context.Context, key string, body []byte) (float64, error) {
	start := time.Now()
	if err := a.putObject(ctx, key, body); err != nil {
		return 0, err
	}
	return float64(len(body)) / (1 << 20) / time.Since(start).Seconds(), nil
}

// getParallel reads key with n concurrent requests; MiB/s over all.
func (a *s3Alone) getParallel(ctx context.Context, key string, size int64, n int) (float64, error) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := a.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &a.bucket, Key: aws.String(key)})
			if err != nil {
				errs[i] = fmt.Errorf("%s: get %s: %w", s3AloneName, key, err)
				return
			}
			defer out.Body.Close()
			got, err := drain(out.Body, nil)
			if err == nil && got != size {
				err = fmt.Errorf("%d bytes, want %d", got, size)
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: read %s: %w", s3AloneName, key, err)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(size) * float64(n) / (1 << 20) / el.Seconds(), nil
}

// putMany stores count objects of body under prefix from n goroutines;
// requests per second.
func (a *s3Alone) putMany(ctx context.Context, prefix string, body []byte, count, n int) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(count) {
					return
				}
				if err := a.putObject(ctx, fmt.Sprintf("%sf-%04d.bin", prefix, i), body); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(count) / el.Seconds(), nil
}

// cpu is the S3 server's CPU time so far in seconds.
func (a *s3Alone) cpu() float64 {
	if a == nil || a.pid == 0 {
		return 0
	}
	return cpuTime([]int{a.pid})
}

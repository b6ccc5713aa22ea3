package contents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/ontoflow/ontoflow/webdav/storeurl"
)

// S3 contents: each upload is one object under a fresh key, written with a
// single PutObject when it fits one part and otherwise as a multipart
// upload streamed part by part. The multipart loop is our own rather than
// the SDK's transfer manager because the upload must (1) hash the bytes on
// their way (three digests over the one pass), (2) record the multipart
// upload id in the database before the first part so a crash leaves
// something the sweep can abort, and touch it as parts go, and (3) bound
// its memory to a known figure whatever the size; the transfer manager
// (pre-1.0, feature/s3/transfermanager) does none of the first two.

const (
	// PartSize is the part size of uploads up to s3GrowAfter parts.
	PartSize = 8 << 20
	// s3InFlight parts upload at once while the next is read: memory per
	// upload is (s3InFlight+1) parts, 40 MiB.
	s3InFlight  = 4
	s3GrowAfter = 2000
	// s3MaxStream is the largest body sent as one streamed PutObject
	// (S3's limit for a single PUT is 5 GiB).
	s3MaxStream = 5 << 30
	// s3BigPart is the part size beyond s3GrowAfter parts (S3 allows
	// 10,000): one in flight, 64 MiB per upload; 272 GB in all.
	s3BigPart = 32 << 20
)

// S3 keeps contents in an S3 bucket under a prefix.
type S3 struct {
	client *s3.Client
	// getter runs GetObject over connections of its own (s3get.go).
	getter *s3.Client
	bucket string
	prefix string // "" or "p/"
}

// Credentials are a static access key pair (Ontoflow's secrets store).
type Credentials struct{ AccessKey, SecretKey string }

// OpenS3 connects to the bucket st names. Credentials come from creds
// when given, else from the standard AWS chain (AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY, shared files, instance roles).
func OpenS3(ctx context.Context, st storeurl.URL, creds *Credentials) (*S3, error) {
	if st.Kind != "s3" {
		return nil, fmt.Errorf("webdav store: %q is not s3", st.Kind)
	}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		// Many uploads and reads at once go to one endpoint.
		t.MaxIdleConnsPerHost = 128
	})
	loads := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(st.Region), awsconfig.WithHTTPClient(hc)}
	if creds != nil {
		loads = append(loads, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(creds.AccessKey, creds.SecretKey, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("webdav store: load AWS configuration: %w", err)
	}
	opts := func(o *s3.Options) {
		if st.Endpoint != "" {
			o.BaseEndpoint = aws.String(st.Endpoint)
		}
		o.UsePathStyle = st.PathStyle
		// No "Expect: 100-continue" on big bodies: a round trip per
		// part for a refusal that our own checks make first.
		o.ContinueHeaderThresholdBytes = -1
		// Checksums only where S3 requires them: Ceph, SeaweedFS and
		// older gateways refuse the newer trailing checksums; the
		// contents' own SHA-256 is kept in the tree.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	c := &S3{client: s3.NewFromConfig(cfg, opts), bucket: st.Bucket}
	c.getter = s3.NewFromConfig(cfg, opts, func(o *s3.Options) { o.HTTPClient = newRawGetClient(hc) })
	if st.Prefix != "" {
		c.prefix = st.Prefix + "/"
	}
	return c, nil
}

// Kind implements Store.
func (c *S3) Kind() string { return "s3" }

func (c *S3) full(key string) string { return c.prefix + key }

// Ping checks that the bucket answers (readiness). Any failure is
// ErrStoreUnavailable: HEAD of a missing bucket answers a bare 404, which
// s3Err would take for a missing object. One attempt, no retries: the
// SDK's backoff over a refused connection took the whole 5 s of /readyz.
func (c *S3) Ping(ctx context.Context) error {
	once := func(o *s3.Options) { o.Retryer = aws.NopRetryer{} }
	if _, err := c.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &c.bucket}, once); err != nil {
		return fmt.Errorf("reach bucket %s: %w: %w", c.bucket, ErrStoreUnavailable, err)
	}
	return nil
}

var partPool = sync.Pool{New: func() any { b := make([]byte, PartSize); return &b }}

// unsigned signs uploads without hashing their bodies: over plain HTTP the
// SDK otherwise runs SHA-256 over every byte it sends (and the server
// checks it again), a third pass beside ours; over HTTPS TLS protects the
// bytes, and the tree keeps the contents' SHA-256 either way.
var unsigned = s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)

// Put implements Store. A body announced below one part is read into a
// buffer of its own size (not a pooled 8 MiB part) and sent in one
// PutObject; a longer announced body (up to s3MaxStream) streams straight
// into one PutObject; a body of unknown length becomes a multipart
// upload, or a PutObject when it turns out to fit one part.
func (c *S3) Put(ctx context.Context, key string, r io.Reader, sizeHint int64, hooks PutHooks) (int64, error) {
	if sizeHint >= PartSize && sizeHint <= s3MaxStream {
		return c.putStream(ctx, key, r, sizeHint, hooks)
	}
	var small []byte
	if sizeHint >= 0 && sizeHint < PartSize {
		// One byte more than announced, to see the end.
		small = make([]byte, sizeHint+1)
		n, rerr := Fill(r, small)
		switch {
		case rerr == io.EOF:
			return int64(n), c.putObject(ctx, key, small[:n])
		case rerr != nil:
			return 0, rerr
		}
		small = small[:n] // longer than announced: carried into parts
	}
	bp := partPool.Get().(*[]byte)
	k := copy(*bp, small)
	n, rerr := Fill(r, (*bp)[k:])
	n += k
	if rerr != nil && rerr != io.EOF {
		partPool.Put(bp)
		return 0, rerr
	}
	if rerr == io.EOF {
		defer partPool.Put(bp)
		return int64(n), c.putObject(ctx, key, (*bp)[:n])
	}
	return c.putMultipart(ctx, key, r, bp, hooks)
}

// putStream sends a body of known length as one PutObject, reading it as
// the request goes: one round trip and no parts to reassemble (a multipart
// upload costs S3 a second pass over the bytes at completion), memory of
// a copy buffer. A request cut short fails; AWS S3 then stores nothing,
// while some servers (versitygw) keep the bytes that arrived under the
// key: either way no node references it, and the handler's cleanup (or,
// after a crash, the sweep, through the row made before) deletes it. The
// row is touched every part's worth of bytes, as a multipart upload
// touches it per part.
func (c *S3) putStream(ctx context.Context, key string, r io.Reader, size int64, hooks PutHooks) (int64, error) {
	sr := &streamReader{ctx: ctx, r: r, touch: hooks.Touch, next: PartSize}
	_, err := c.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &c.bucket, Key: aws.String(c.full(key)),
		Body: sr, ContentLength: aws.Int64(size),
	}, unsigned)
	if sr.err != nil {
		// The client's body (or its limits) failed, not S3.
		return sr.n, sr.err
	}
	return sr.n, s3Err("put object", err)
}

// streamReader passes a streamed body to the SDK, counting it, touching
// the upload's row as it goes and keeping the body's own error apart
// from S3's.
type streamReader struct {
	ctx   context.Context
	r     io.Reader
	touch func(context.Context) error
	n     int64
	next  int64 // touch once n reaches it
	err   error
}

func (s *streamReader) Read(p []byte) (int, error) {
	k, err := s.r.Read(p)
	s.n += int64(k)
	if err != nil && err != io.EOF {
		s.err = err
	}
	if s.n >= s.next && s.touch != nil && err == nil {
		s.next += PartSize
		if terr := s.touch(s.ctx); terr != nil {
			s.err = fmt.Errorf("touch upload record: %w", terr)
			return k, s.err
		}
	}
	return k, err
}

func (c *S3) putObject(ctx context.Context, key string, b []byte) error {
	_, err := c.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &c.bucket, Key: aws.String(c.full(key)),
		Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
	}, unsigned)
	return s3Err("put object", err)
}

// multipart is one multipart upload under way.
type multipart struct {
	c     *S3
	key   string
	id    string
	hooks PutHooks
	mu    sync.Mutex
	err   error
	parts []types.CompletedPart
	wg    sync.WaitGroup
}

func (c *S3) putMultipart(ctx context.Context, key string, r io.Reader, first *[]byte, hooks PutHooks) (total int64, err error) {
	out, err := c.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &c.bucket, Key: aws.String(c.full(key))})
	if err != nil {
		partPool.Put(first)
		return 0, s3Err("start multipart upload", err)
	}
	m := &multipart{c: c, key: c.full(key), id: aws.ToString(out.UploadId), hooks: hooks}
	defer func() {
		if err != nil {
			// Whatever happened (client gone, S3 down), the parts
			// must not linger; the sweep retries if this fails.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = c.AbortUpload(actx, key, m.id)
		}
	}()
	if hooks.Started != nil {
		if err := hooks.Started(ctx, m.id); err != nil {
			partPool.Put(first)
			return 0, err
		}
	}
	total, err = m.send(ctx, r, first)
	if err != nil {
		return total, err
	}
	_, err = c.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &c.bucket, Key: &m.key, UploadId: &m.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: m.parts},
	})
	return total, s3Err("complete multipart upload", err)
}

// send reads parts from r (first already holds the first) and uploads up
// to s3InFlight of them while reading the next.
func (m *multipart) send(ctx context.Context, r io.Reader, first *[]byte) (int64, error) {
	sem := make(chan struct{}, s3InFlight)
	buf, k := first, len(*first)
	var total int64
	var rerr error
	for num := int32(1); ; num++ {
		total += int64(k)
		size := k
		if num > s3GrowAfter {
			// Big parts: one at a time keeps memory at two parts.
			for len(sem) < s3InFlight-1 {
				sem <- struct{}{}
			}
		}
		sem <- struct{}{}
		if m.failed() != nil {
			<-sem
			break
		}
		m.wg.Add(1)
		go m.upload(ctx, num, buf, size, sem)
		if rerr == io.EOF {
			break
		}
		buf = m.nextBuf(num + 1)
		k, rerr = Fill(r, *buf)
		if rerr != nil && rerr != io.EOF {
			m.fail(rerr)
			m.release(buf)
			break
		}
		if k == 0 {
			m.release(buf)
			break
		}
	}
	m.wg.Wait()
	for len(sem) > 0 {
		<-sem
	}
	return total, m.failed()
}

func (m *multipart) nextBuf(num int32) *[]byte {
	if num > s3GrowAfter {
		b := make([]byte, s3BigPart)
		return &b
	}
	return partPool.Get().(*[]byte)
}

func (m *multipart) release(b *[]byte) {
	if len(*b) == PartSize {
		partPool.Put(b)
	}
}

func (m *multipart) upload(ctx context.Context, num int32, buf *[]byte, size int, sem chan struct{}) {
	defer m.wg.Done()
	defer func() { <-sem }()
	defer m.release(buf)
	out, err := m.c.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &m.c.bucket, Key: &m.key, UploadId: &m.id, PartNumber: aws.Int32(num),
		Body: bytes.NewReader((*buf)[:size]), ContentLength: aws.Int64(int64(size)),
	}, unsigned)
	if err != nil {
		m.fail(s3Err("upload part", err))
		return
	}
	m.mu.Lock()
	// Parts finish out of order; Complete wants them sorted.
	i := len(m.parts)
	m.parts = append(m.parts, types.CompletedPart{})
	for i > 0 && aws.ToInt32(m.parts[i-1].PartNumber) > num {
		m.parts[i] = m.parts[i-1]
		i--
	}
	m.parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)}
	m.mu.Unlock()
	if m.hooks.Touch != nil {
		if err := m.hooks.Touch(ctx); err != nil {
			m.fail(err)
		}
	}
}

func (m *multipart) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	m.mu.Unlock()
}

func (m *multipart) failed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Get implements Store.
func (c *S3) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &c.bucket, Key: aws.String(c.full(key))}
	switch {
	case n >= 0:
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), nil
		}
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := c.getter.GetObject(ctx, in)
	if err != nil {
		return nil, s3Err("get object", err)
	}
	return out.Body, nil
}

// Delete implements Store.
func (c *S3) Delete(ctx context.Context, key string) error {
	_, err := c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &c.bucket, Key: aws.String(c.full(key))})
	if err = s3Err("delete object", err); errors.Is(err, ErrNoObject) {
		return nil
	}
	return err
}

// AbortUpload implements Store.
func (c *S3) AbortUpload(ctx context.Context, key, uploadID string) error {
	_, err := c.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &c.bucket, Key: aws.String(c.full(key)), UploadId: &uploadID,
	})
	if err = s3Err("abort multipart upload", err); errors.Is(err, ErrNoObject) {
		return nil
	}
	return err
}

// Scan implements Store: objects first ("o:" cursors), then multipart
// uploads ("u:" cursors).
func (c *S3) Scan(ctx context.Context, cursor string, limit int) ([]StoredObject, string, error) {
	now := time.Now()
	if !strings.HasPrefix(cursor, "u:") {
		in := &s3.ListObjectsV2Input{Bucket: &c.bucket, Prefix: aws.String(c.prefix), MaxKeys: aws.Int32(int32(limit))}
		if after := strings.TrimPrefix(cursor, "o:"); after != "" {
			in.StartAfter = aws.String(c.full(after))
		}
		out, err := c.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, cursor, s3Err("list objects", err)
		}
		objs := make([]StoredObject, 0, len(out.Contents))
		for _, o := range out.Contents {
			objs = append(objs, StoredObject{Key: strings.TrimPrefix(aws.ToString(o.Key), c.prefix), AgeNs: int64(now.Sub(aws.ToTime(o.LastModified)))})
		}
		next := "u:"
		if aws.ToBool(out.IsTruncated) && len(objs) > 0 {
			next = "o:" + objs[len(objs)-1].Key
		}
		return objs, next, nil
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &c.bucket, Prefix: aws.String(c.prefix), MaxUploads: aws.Int32(int32(limit))}
	if km, um, ok := strings.Cut(strings.TrimPrefix(cursor, "u:"), "\x00"); ok {
		in.KeyMarker, in.UploadIdMarker = aws.String(c.full(km)), aws.String(um)
	}
	out, err := c.client.ListMultipartUploads(ctx, in)
	if err != nil {
		return nil, cursor, s3Err("list multipart uploads", err)
	}
	objs := make([]StoredObject, 0, len(out.Uploads))
	for _, u := range out.Uploads {
		objs = append(objs, StoredObject{Key: strings.TrimPrefix(aws.ToString(u.Key), c.prefix), UploadID: aws.ToString(u.UploadId), AgeNs: int64(now.Sub(aws.ToTime(u.Initiated)))})
	}
	next := ""
	if aws.ToBool(out.IsTruncated) {
		next = "u:" + strings.TrimPrefix(aws.ToString(out.NextKeyMarker), c.prefix) + "\x00" + aws.ToString(out.NextUploadIdMarker)
	}
	return objs, next, nil
}

// s3Err wraps err with what was being done: ErrNoObject for a missing key
// or upload, ErrStoreUnavailable when S3 could not be reached or failed
// on its side (5xx), as is otherwise.
func s3Err(what string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchUpload":
			return fmt.Errorf("%s: %w", what, ErrNoObject)
		case "NoSuchBucket":
			// A 404, but not the client's: no request succeeds until the
			// operator makes the bucket (issue 45: every PUT was a 500).
			return fmt.Errorf("%s: %w: the bucket does not exist: %w", what, ErrStoreUnavailable, err)
		}
	}
	// A request that never reached S3 (connection refused, reset) carries
	// status 0: that is an outage too, not the client's error.
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() > 0 && re.HTTPStatusCode() < 500 {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: %w", what, ErrStoreUnavailable, err)
}

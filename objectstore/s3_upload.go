package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Defaults and limits of S3 streaming uploads; see WithUploadParts.
const (
	DefaultS3PartSize = 8 << 20 // bytes per multipart upload part
	DefaultS3InFlight = 2       // parts sent at once by one upload
	minS3PartSize     = 5 << 20 // S3's smallest part but the last
	maxS3Parts        = 10000   // S3's most parts per upload
	// s3CleanupTimeout bounds the requests an upload makes after its
	// context is cancelled: creating the multipart upload it must then
	// abort, and the abort itself.
	s3CleanupTimeout = 30 * time.Second
)

// WithUploadParts sets the part size in bytes (at least 5 MiB, S3's
// minimum; default DefaultS3PartSize) and the number of parts one upload
// sends at once (at least 1; default DefaultS3InFlight). An upload holds at
// most (inFlight+1)·partSize bytes and stores objects of up to 10,000 parts
// (78 GiB with the default part size).
func WithUploadParts(partSize int64, inFlight int) S3Option {
	return func(c *s3Config) {
		c.partSize = max(partSize, minS3PartSize)
		c.inFlight = max(inFlight, 1)
	}
}

// Upload implements Uploader. An object smaller than one part is sent with
// one PutObject on Commit. A larger one becomes a multipart upload: each
// full part is sent while the next fills, at most WithUploadParts' inFlight
// at once, and Commit completes the upload. On any failure (a part
// refused, a cancelled ctx, a failed Commit) and on Abort, the multipart
// upload is aborted before the call that reports it returns, so none is
// left open; only a process that dies mid-upload leaves one, for the
// bucket's lifecycle rule (AbortIncompleteMultipartUpload) to remove.
func (s *S3) Upload(ctx context.Context, key string) (Upload, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, s.err("upload", key, err)
	}
	uctx, cancel := context.WithCancel(ctx)
	u := &s3Upload{
		s:        s,
		key:      key,
		ctx:      uctx,
		cancel:   cancel,
		partSize: int(s.partSize),
		inFlight: s.inFlight,
		slots:    make(chan []byte, s.inFlight+1),
		sem:      make(chan struct{}, s.inFlight),
	}
	// A cancelled ctx aborts the upload even when no call of the caller
	// notices it.
	u.stop = context.AfterFunc(ctx, func() { u.fail(ctx.Err()) })
	return u, nil
}

// s3Upload is one streaming upload. Write, Commit and Abort run on the
// caller's goroutine; parts are sent on their own goroutines, and a
// cancelled ctx fails the upload on another: mu guards what they share.
type s3Upload struct {
	s        *S3
	key      string
	ctx      context.Context // the parts' context: cancelled on failure and at the end
	cancel   context.CancelFunc
	stop     func() bool // stops the AfterFunc of the caller's ctx
	partSize int
	inFlight int

	// The caller's goroutine only.
	buf   []byte        // the part being filled
	slots chan []byte   // buffers of sent parts, back for reuse
	sem   chan struct{} // one token per part in flight
	made  int           // part buffers allocated: at most inFlight+1
	next  int32         // number of the next part, from 1; 0 before the first is sent
	done  bool          // Commit or Abort was called

	mu       sync.Mutex
	uploadID string // "" until the multipart upload exists, and after it completed
	parts    []types.CompletedPart
	err      error // the first failure; the upload is aborted then
	sending  sync.WaitGroup

	abortOnce sync.Once
	abortErr  error
}

func (u *s3Upload) keyErr(err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return err
	}
	return u.s.err("upload", u.key, err)
}

// failure returns the recorded failure, if any.
func (u *s3Upload) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// fail records err as the upload's failure (the first one wins), aborts the
// upload and waits for that, and returns the recorded failure.
func (u *s3Upload) fail(err error) error {
	u.mu.Lock()
	if u.err == nil {
		u.err = u.keyErr(err)
	}
	err = u.err
	u.mu.Unlock()
	u.abort()
	return err
}

// abort stops the parts in flight, waits for them and aborts the multipart
// upload, once; later calls wait for the first. The abort request gets a
// fresh deadline: the upload's own context may be the one cancelled.
func (u *s3Upload) abort() {
	u.abortOnce.Do(func() {
		u.stop()
		u.cancel()
		u.sending.Wait()
		u.mu.Lock()
		id := u.uploadID
		u.uploadID = ""
		u.mu.Unlock()
		if id == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), s3CleanupTimeout)
		defer cancel()
		u.abortErr = u.s.abortMultipart(ctx, u.key, id)
	})
}

func (s *S3) abortMultipart(ctx context.Context, key, id string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &s.bucket, Key: aws.String(s.root + key), UploadId: aws.String(id),
	})
	if err != nil && apiCode(err) != "NoSuchUpload" {
		return s.err("upload", key, fmt.Errorf("abort multipart upload %s: %w", id, err))
	}
	return nil
}

func (u *s3Upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, u.s.err("upload", u.key, ErrUploadClosed)
	}
	if err := u.failure(); err != nil {
		u.abort()
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		if len(u.buf) == u.partSize {
			if err := u.sendPart(false); err != nil {
				return written, u.fail(err)
			}
		}
		if u.buf == nil {
			// The first part grows as needed: a small object never holds
			// a whole part's buffer.
			u.buf = make([]byte, 0, min(max(len(p), 64<<10), u.partSize))
			u.made = 1
		}
		chunk := p[:min(len(p), u.partSize-len(u.buf))]
		if len(u.buf)+len(chunk) > cap(u.buf) {
			grown := make([]byte, len(u.buf), min(max(2*cap(u.buf), len(u.buf)+len(chunk)), u.partSize))
			copy(grown, u.buf)
			u.buf = grown
		}
		u.buf = append(u.buf, chunk...)
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// sendPart starts sending u.buf as the next part. Unless it is the last,
// it then takes a buffer for the next part, waiting while inFlight parts
// are on their way.
func (u *s3Upload) sendPart(last bool) error {
	if u.next == 0 {
		if err := u.create(); err != nil {
			return err
		}
		u.next = 1
	}
	if u.next > maxS3Parts {
		return fmt.Errorf("object exceeds %d parts of %d bytes (see WithUploadParts)", maxS3Parts, u.partSize)
	}
	select {
	case u.sem <- struct{}{}:
	case <-u.ctx.Done():
		return u.stopped()
	}
	u.mu.Lock()
	if u.err != nil {
		u.mu.Unlock()
		<-u.sem
		return u.err
	}
	id := u.uploadID
	u.sending.Add(1)
	u.mu.Unlock()
	go u.upload(id, u.next, u.buf)
	u.next++
	u.buf = nil
	if last {
		return nil
	}
	// At most inFlight buffers are being sent: one more is the next part.
	if u.made < u.inFlight+1 {
		u.made++
		u.buf = make([]byte, 0, u.partSize)
		return nil
	}
	select {
	case b := <-u.slots:
		u.buf = b[:0]
		return nil
	case <-u.ctx.Done():
		return u.stopped()
	}
}

// stopped returns why the upload's context is done: the recorded failure,
// or the context's error.
func (u *s3Upload) stopped() error {
	if err := u.failure(); err != nil {
		return err
	}
	return u.ctx.Err()
}

// create starts the multipart upload. The request runs to its end even
// when the upload's context is cancelled meanwhile, so that an upload the
// server created is known, and aborted.
func (u *s3Upload) create() error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), s3CleanupTimeout)
	defer cancel()
	out, err := u.s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            &u.s.bucket,
		Key:               aws.String(u.s.root + u.key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return fmt.Errorf("create multipart upload: %w", err)
	}
	id := aws.ToString(out.UploadId)
	u.mu.Lock()
	u.uploadID = id
	failed := u.err
	u.mu.Unlock()
	if failed != nil {
		// The upload failed meanwhile (its ctx was cancelled), and its
		// abort may have run before the ID was known: abort it here. A
		// second abort of the same ID is harmless.
		_ = u.s.abortMultipart(ctx, u.key, id)
		return failed
	}
	return u.ctx.Err()
}

// upload sends one part; it runs on its own goroutine and hands buf back
// for reuse.
func (u *s3Upload) upload(id string, n int32, buf []byte) {
	out, err := u.s.client.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket:            &u.s.bucket,
		Key:               aws.String(u.s.root + u.key),
		UploadId:          aws.String(id),
		PartNumber:        aws.Int32(n),
		Body:              bytes.NewReader(buf),
		ContentLength:     aws.Int64(int64(len(buf))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	u.slots <- buf
	<-u.sem
	u.mu.Lock()
	if err != nil {
		if u.err == nil {
			u.err = u.keyErr(fmt.Errorf("upload part %d: %w", n, err))
		}
	} else {
		u.parts = append(u.parts, types.CompletedPart{
			PartNumber:        aws.Int32(n),
			ETag:              out.ETag,
			ChecksumCRC32:     out.ChecksumCRC32,
			ChecksumCRC32C:    out.ChecksumCRC32C,
			ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1:      out.ChecksumSHA1,
			ChecksumSHA256:    out.ChecksumSHA256,
		})
	}
	u.mu.Unlock()
	if err != nil {
		u.cancel() // stop the other parts; the caller's next call aborts
	}
	u.sending.Done()
}

func (u *s3Upload) Commit(ctx context.Context) error {
	if u.done {
		return u.s.err("upload", u.key, ErrUploadClosed)
	}
	u.done = true
	// From here on the caller's ctx of Upload no longer aborts by itself;
	// a cancellation still fails the parts in flight.
	u.stop()
	if err := u.failure(); err != nil {
		u.abort()
		return err
	}
	if err := u.ctx.Err(); err != nil {
		return u.fail(err)
	}
	if err := ctx.Err(); err != nil {
		return u.fail(err)
	}
	if u.next == 0 {
		// Smaller than one part: one PutObject.
		data := u.buf
		u.buf = nil
		_, err := u.s.client.PutObject(ctx, u.s.putInput(u.key, data))
		u.abort() // nothing to abort: this releases the context
		if err != nil {
			return u.keyErr(err)
		}
		return nil
	}
	if len(u.buf) > 0 {
		if err := u.sendPart(true); err != nil {
			return u.fail(err)
		}
	}
	u.sending.Wait()
	u.mu.Lock()
	err := u.err
	parts := slices.Clone(u.parts)
	id := u.uploadID
	u.mu.Unlock()
	if err != nil {
		u.abort()
		return err
	}
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	_, err = u.s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &u.s.bucket,
		Key:             aws.String(u.s.root + u.key),
		UploadId:        aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		// Aborting a completed upload is harmless (NoSuchUpload), so a
		// lost reply is aborted too: the object may still have appeared.
		return u.fail(fmt.Errorf("complete multipart upload: %w", err))
	}
	u.mu.Lock()
	u.uploadID = "" // completed: nothing left to abort
	u.mu.Unlock()
	u.abort()
	return nil
}

func (u *s3Upload) Abort(context.Context) error {
	u.done = true
	u.buf = nil
	u.abort()
	return u.abortErr
}

// PendingUploads returns the keys (relative to the store's root) of the
// multipart uploads open on the server under prefix: uploads begun and
// neither completed nor aborted. Tests use it to check that no upload is
// left behind; a cleanup tool can abort what it finds with the S3 API.
func (s *S3) PendingUploads(ctx context.Context, prefix string) ([]string, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.root + prefix)}
	var keys []string
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, s.err("list", prefix, fmt.Errorf("list multipart uploads: %w", err))
		}
		for _, up := range out.Uploads {
			keys = append(keys, strings.TrimPrefix(aws.ToString(up.Key), s.root))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

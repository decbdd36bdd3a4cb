package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/google/uuid"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The streaming figures of issue 17 item 4, each measured in a child
// process (Env.RSSChild) so that its peak RSS is its own:
//
//	R1 upload-rss    one data file of Config.UploadBytes streamed to MinIO
//	                 through parquetio.CreateFile (S3 multipart) and
//	                 committed with Table.AppendFiles
//	R2 optimize-rss  Table.Optimize of Config.OptimizeBytes of small files
//	                 on the local filesystem

// rssLinePrefix starts the line an RSS child writes with its report.
const rssLinePrefix = "deltabench-rss: "

// RSSJob is what one RSS child process does.
type RSSJob struct {
	// Kind is "upload" (R1) or "optimize" (R2).
	Kind string
	// S3 connection and the table's prefix (upload).
	Endpoint, AccessKey, SecretKey, Bucket, Region, Prefix string
	// Dir is the local table to optimize.
	Dir string
	// Bytes is the size of the file to upload (upload).
	Bytes int64
}

// rssReport is what an RSS child measured.
type rssReport struct {
	childUsage
	// TotalAllocBytes is what the Go heap allocated during the work.
	TotalAllocBytes uint64 `json:"total_alloc_bytes"`
	// HeapSysBytes is the heap memory obtained from the OS at the end.
	HeapSysBytes uint64 `json:"heap_sys_bytes"`
	FileBytes    int64  `json:"file_bytes"` // bytes written (upload: the file; optimize: the new files)
	Rows         int64  `json:"rows"`
	FilesIn      int    `json:"files_in"`
	FilesOut     int    `json:"files_out"`
	Version      int64  `json:"version"`
}

// RSSChild is the body of an R1/R2 child process: it runs job (an RSSJob
// as JSON) and writes one line "deltabench-rss: {json}" to w with its
// figures, the process's peak resident set (VmHWM) among them.
func RSSChild(ctx context.Context, job string, w io.Writer) error {
	var j RSSJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("bench: rss child job %q: %w", job, err)
	}
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var r *rssReport
	usage, err := measureChild(func() (err error) {
		switch j.Kind {
		case "upload":
			r, err = uploadJob(ctx, j)
		case "optimize":
			r, err = optimizeJob(ctx, j)
		default:
			err = fmt.Errorf("bench: rss child: unknown job kind %q", j.Kind)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.childUsage = usage
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	r.TotalAllocBytes, r.HeapSysBytes = m1.TotalAlloc-m0.TotalAlloc, m1.HeapSys
	return writeChildLine(w, rssLinePrefix, r)
}

// uploadSchema is R1's table: an id and a kilobyte of random text per row,
// so the file is about as large as its values (Snappy cannot shrink it
// much) and 2 GiB take ~2 M rows.
func uploadSchema() *schema.StructType {
	return schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("payload", schema.Primitive(schema.String), true),
	)
}

// uploadPayload is the size of R1's (and R2's) payload values in bytes.
const uploadPayload = 1000

// payloadRows fills rows (reused: each row's values) with ids from first
// and fresh random payloads drawn from rng.
func payloadRows(rng *rand.ChaCha8, rows []value.Row, first int64, buf []byte) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	for i := range rows {
		_, _ = rng.Read(buf)
		for k, c := range buf {
			buf[k] = letters[int(c)%len(letters)]
		}
		rows[i][0] = first + int64(i)
		rows[i][1] = string(buf)
	}
}

// uploadJob streams one data file of about j.Bytes to the table at j.Prefix
// and commits it.
func uploadJob(ctx context.Context, j RSSJob) (*rssReport, error) {
	store, err := objectstore.NewS3(ctx, j.Bucket, j.Prefix, objectstore.WithEndpoint(j.Endpoint), objectstore.WithPathStyle(true),
		objectstore.WithRegion(j.Region), objectstore.WithCredentials(j.AccessKey, j.SecretKey))
	if err != nil {
		return nil, err
	}
	tbl, err := table.Open(ctx, "", table.WithStore(store))
	if err != nil {
		return nil, err
	}
	defer tbl.Close(ctx)
	key := "part-00000-" + uuid.NewString() + "-c000.snappy.parquet"
	// The options of the table's own data files: row groups of
	// min(64 MiB, target file size) (table's maxRowGroupBytes), here the
	// file is larger than both.
	fw, err := parquetio.CreateFile(ctx, store, key, uploadSchema(), parquetio.WithRowGroupSize(64<<20))
	if err != nil {
		return nil, err
	}
	defer fw.Abort()
	rng := rand.NewChaCha8([32]byte{1})
	const batch = 1024
	rows := make([]value.Row, batch)
	for i := range rows {
		rows[i] = make(value.Row, 2)
	}
	buf := make([]byte, uploadPayload)
	var n int64
	for n*(uploadPayload+8) < j.Bytes { // the values' bytes: the file is about as large
		payloadRows(rng, rows, n, buf)
		if err := fw.Write(rows); err != nil {
			return nil, err
		}
		n += batch
		if n%(batch*64) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	wf, err := fw.Close(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := wf.Stats.JSON()
	if err != nil {
		return nil, err
	}
	nt, err := tbl.AppendFiles(ctx, []*txlog.Add{{Path: key, Size: wf.Size, ModificationTime: time.Now().UnixMilli(),
		DataChange: true, Stats: stats, PartitionValues: map[string]string{}}})
	if err != nil {
		return nil, err
	}
	return &rssReport{FileBytes: wf.Size, Rows: wf.Rows, FilesOut: 1, Version: nt.Version()}, nil
}

// optimizeJob compacts the local table at j.Dir.
func optimizeJob(ctx context.Context, j RSSJob) (*rssReport, error) {
	tbl, err := table.Open(ctx, j.Dir)
	if err != nil {
		return nil, err
	}
	defer tbl.Close(ctx)
	nt, res, err := tbl.Optimize(ctx)
	if err != nil {
		return nil, err
	}
	if !res.Committed {
		return nil, fmt.Errorf("bench: optimize of %s committed nothing", j.Dir)
	}
	return &rssReport{FileBytes: res.BytesAdded, Rows: res.Rows, FilesIn: res.FilesRemoved, FilesOut: res.FilesAdded,
		Version: nt.Version()}, nil
}

func runRSSChild(ctx context.Context, env *Env, j RSSJob) (*rssReport, error) {
	job, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	var r rssReport
	if err := runChild(env.RSSChild(ctx, string(job)), "rss child", "rss child ("+j.Kind+")", rssLinePrefix, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Goals of R1 and R2 (issue 17 item 4), for the full sizes.
const (
	uploadGoalBytes    = 2 << 30
	uploadGoalRSSMiB   = 256
	optimizeGoalBytes  = 1 << 30
	optimizeGoalRSSMiB = 512
)

// UploadFigure measures R1: the peak RSS of a process that streams one data
// file of Config.UploadBytes to MinIO and commits it.
func UploadFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "R1", Title: "upload-rss: one large data file streamed to MinIO",
		Setup: fmt.Sprintf("MinIO; a child process writes one Parquet file of %s (rows of a long and 1,000 random characters) "+
			"through parquetio.CreateFile (S3 multipart upload, %d MiB parts, %d in flight) and commits it with AppendFiles; VmHWM of /proc/self/status",
			humanBytes(cfg.UploadBytes), objectstore.DefaultS3PartSize>>20, objectstore.DefaultS3InFlight)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	if skipWithoutChild(fig, env.RSSChild) {
		return fig, nil
	}
	s3 := env.S3
	prefix := uniquePrefix("r1")
	store, err := s3.StoreAt(ctx, prefix)
	if err != nil {
		return fig, err
	}
	tbl, err := table.Create(ctx, "", uploadSchema(), table.WithStore(store))
	if err != nil {
		return fig, err
	}
	_ = tbl.Close(ctx)
	r, err := runRSSChild(ctx, env, RSSJob{Kind: "upload", Endpoint: s3.Endpoint, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
		Bucket: s3.Bucket, Region: s3.Region, Prefix: prefix, Bytes: cfg.UploadBytes})
	if err != nil {
		return fig, err
	}
	fig.addPeakRSS(r.PeakRSSKB, uploadGoalRSSMiB, cfg.UploadBytes >= uploadGoalBytes, "to a 2 GiB file", "writes "+humanBytes(cfg.UploadBytes))
	addRSSMetrics(fig, r)
	// Remove the data file: MinIO's disk is shared with the other figures.
	if nt, err := table.Open(ctx, "", table.WithStore(store)); err == nil {
		for _, a := range nt.Snapshot().Files() {
			_ = store.Delete(ctx, txlog.DecodePath(a.Path))
		}
		_ = nt.Close(ctx)
	}
	return fig, nil
}

// addRSSMetrics adds the metrics every RSS figure has.
func addRSSMetrics(fig *Figure, r *rssReport) {
	fig.add("file_bytes", float64(r.FileBytes)/(1<<20), "MiB")
	fig.add("rows", float64(r.Rows), "count")
	fig.add("wall", r.Seconds, "s")
	fig.add("cpu", r.CPUSeconds, "s")
	if r.Seconds > 0 {
		fig.add("throughput", float64(r.FileBytes)/(1<<20)/r.Seconds, "MiB/s")
	}
	fig.add("heap_allocated", float64(r.TotalAllocBytes)/(1<<20), "MiB")
	fig.add("heap_sys_at_end", float64(r.HeapSysBytes)/(1<<20), "MiB")
	fig.add("baseline_rss", float64(r.BaselineRSSKB)/1024, "MiB")
}

// OptimizeFigure measures R2: the peak RSS of a process that runs
// Table.Optimize (default 128 MiB target) over Config.OptimizeBytes of
// small files on the local filesystem.
func OptimizeFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fileBytes := cfg.OptimizeFileBytes
	fig := &Figure{ID: "R2", Title: "optimize-rss: OPTIMIZE of many small files",
		Setup: fmt.Sprintf("local filesystem; a table of %s in files of ~%s (rows of a long and 1,000 random characters); "+
			"a child process opens it and runs Table.Optimize (128 MiB target); VmHWM of /proc/self/status",
			humanBytes(cfg.OptimizeBytes), humanBytes(fileBytes))}
	if skipWithoutChild(fig, env.RSSChild) {
		return fig, nil
	}
	dir, err := os.MkdirTemp(env.TempDir, "r2-table-")
	if err != nil {
		return fig, err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	files, err := generatePayloadTable(ctx, dir, cfg.OptimizeBytes, fileBytes)
	if err != nil {
		return fig, err
	}
	fig.add("generate_table", time.Since(t0).Seconds(), "s")
	env.logf("R2: %d files generated in %v", files, time.Since(t0).Round(time.Millisecond))
	r, err := runRSSChild(ctx, env, RSSJob{Kind: "optimize", Dir: dir})
	if err != nil {
		return fig, err
	}
	fig.addPeakRSS(r.PeakRSSKB, optimizeGoalRSSMiB, cfg.OptimizeBytes >= optimizeGoalBytes,
		"to 1 GiB of files", "compacts "+humanBytes(cfg.OptimizeBytes))
	addRSSMetrics(fig, r)
	fig.add("files_in", float64(r.FilesIn), "count")
	fig.add("files_out", float64(r.FilesOut), "count")
	return fig, nil
}

// generatePayloadTable writes a local table of about total bytes of data
// files of about fileBytes each (R1's schema), committed at once; it
// returns the number of files.
func generatePayloadTable(ctx context.Context, dir string, total, fileBytes int64) (int, error) {
	tbl, err := table.Create(ctx, dir, uploadSchema(), table.WithSyncCheckpoints())
	if err != nil {
		return 0, err
	}
	defer tbl.Close(ctx)
	rowsPerFile := max(1, int(fileBytes/(uploadPayload+8)))
	rng := rand.NewChaCha8([32]byte{2})
	buf := make([]byte, uploadPayload)
	rows := make([]value.Row, rowsPerFile)
	var adds []*txlog.Add
	var written, next int64
	for written < total {
		for i := range rows {
			rows[i] = make(value.Row, 2)
		}
		payloadRows(rng, rows, next, buf)
		next += int64(len(rows))
		a, err := tbl.WriteFiles(ctx, rows)
		if err != nil {
			return 0, err
		}
		for _, x := range a {
			written += x.Size
		}
		adds = append(adds, a...)
		// One commit per 100 files keeps each commit small.
		if len(adds) >= 100 {
			if tbl, err = tbl.AppendFiles(ctx, adds); err != nil {
				return 0, err
			}
			adds = nil
		}
	}
	if len(adds) > 0 {
		if tbl, err = tbl.AppendFiles(ctx, adds); err != nil {
			return 0, err
		}
	}
	return tbl.Snapshot().NumFiles(), nil
}

// humanBytes prints n as "2 GiB", "512 MiB", "64 KiB" or "123 B".
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

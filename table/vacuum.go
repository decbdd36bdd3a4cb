package table

import (
	"context"
	"time"

	"github.com/deltakit/deltakit/table/internal/maint"
)

// Vacuum is table's API of data file cleanup; the planning (what is
// unreferenced, expired and safe to delete) and the deletes live in
// table/internal/maint (maintenance).

// DefaultDeletedFileRetention is the default of the table property
// delta.deletedFileRetentionDuration ("interval 1 week"): how long a removed
// data file stays on storage for readers of older versions.
const DefaultDeletedFileRetention = maint.DefaultDeletedFileRetention

// ErrRetentionTooShort is returned (wrapped, together with
// ErrInvalidArgument) by Vacuum for a retention below the table's
// delta.deletedFileRetentionDuration without WithVacuumForce: deleting
// files that recent readers or writers may still need can corrupt their
// results.
var ErrRetentionTooShort = maint.ErrRetentionTooShort

// VacuumOption configures Vacuum.
type VacuumOption = maint.VacuumOption

// WithVacuumRetention sets how old a removed or unreferenced file must be
// before Vacuum deletes it (default: the table's
// delta.deletedFileRetentionDuration, one week when unset).
func WithVacuumRetention(d time.Duration) VacuumOption { return maint.WithVacuumRetention(d) }

// WithVacuumDryRun makes Vacuum report what it would delete without
// deleting anything.
func WithVacuumDryRun(on bool) VacuumOption { return maint.WithVacuumDryRun(on) }

// WithVacuumForce allows a retention below the table's
// delta.deletedFileRetentionDuration.
func WithVacuumForce(on bool) VacuumOption { return maint.WithVacuumForce(on) }

// WithVacuumConcurrency sets how many deletes run at once (default 16).
func WithVacuumConcurrency(n int) VacuumOption { return maint.WithVacuumConcurrency(n) }

// WithVacuumProgress calls fn as files are deleted, with the number done
// and the total. fn is called from one goroutine at a time.
func WithVacuumProgress(fn func(done, total int)) VacuumOption { return maint.WithVacuumProgress(fn) }

// VacuumFile is one file Vacuum deleted or, in a dry run, would delete.
type VacuumFile = maint.VacuumFile

// VacuumResult reports what Vacuum did.
type VacuumResult = maint.VacuumResult

// Vacuum deletes data files that the table no longer needs, as Spark's
// VACUUM does: files under the table root that the latest version does not
// reference and that were removed (by the deletionTimestamp of their remove
// action) or, for files no remove action records, last modified longer ago
// than the retention. It never deletes a file the latest snapshot
// references (data files and deletion vector files), never anything under
// "_delta_log/" and never files in hidden directories (names starting with
// "_" or ".", unless they are partition directories "col=value").
//
// Change data files (_change_data/, spec "Change Data Files") are never
// referenced by a snapshot: as Spark's VACUUM does, Vacuum deletes those
// last modified longer ago than the retention, so that the change data
// feed of versions older than the retention may be gone afterwards (Changes
// then fails on the missing file), as for the data files of time travel.
//
// A removed file's removal time comes from the remove actions the log still
// holds (commits and the checkpoint it replays from); for a file whose
// remove action is gone (a checkpoint dropped the expired tombstone, or log
// cleanup deleted the commit), its modification time decides, as for a file
// the log never referenced.
//
// Retention is measured back from the table's clock (WithClock, default
// time.Now). The retention defaults to the table's delta.deletedFileRetentionDuration
// (one week); a shorter one is refused with ErrRetentionTooShort unless
// WithVacuumForce. Vacuum works on the latest version, whatever version t
// shows, and reads the log again right before deleting so that files a
// concurrent commit added are kept. It writes no commit.
//
// Errors: ErrRetentionTooShort; store errors while listing or deleting
// (files deleted before the error are not reported); ctx errors.
func (t *Table) Vacuum(ctx context.Context, opts ...VacuumOption) (*VacuumResult, error) {
	if t == nil {
		return nil, nilTableError("vacuum")
	}
	return maint.Vacuum(ctx, t.snap, append([]VacuumOption{maint.WithVacuumClock(t.cfg.now), maint.WithVacuumLogger(t.cfg.logger)}, opts...)...)
}

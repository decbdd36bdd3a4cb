package txlog

import (
	"context"
	"sync"

	"github.com/deltakit/deltakit/objectstore"
)

// winnerWindow is how many versions a lost race reads at once. It was 4
// (P4, round two); with 16 contending writers in one process
// (TestContendingBlindAppendsMinIO under -race) the parallel GETs made the
// run 2-3x slower (20-37 s against 9-12 s) and a writer lost 160 races in a
// row and gave up, in half the runs, so a lost race reads one version at a
// time again. Round three tried a LIST of the log once three winners were
// read, then the rest 8 at a time: at 8 writer processes it cost 1.2 LISTs
// and 1.3 lost PUTs per commit (9.9 requests per commit against 7.7 with
// one GET at a time, P4 in BENCHMARKS.md) and gave no faster slowest
// commit, so it was dropped.
const winnerWindow = 1

// readWinners reads the commits that took version and the versions after
// it, for a commit that found version taken: it GETs winnerWindow versions
// from version in parallel, and the next window while all of them are
// taken, so that k winners and the free version after them cost
// ceil((k+1)/winnerWindow) round trips instead of k+1 (each GET, then the
// GET of the next version that finds it free); a GET of a free version is
// a cheap 404. (A LIST of the log would find the winners in one request,
// but on MinIO it is slower than the GETs, and a writer that lists while
// the others commit keeps losing: see winnerWindow.) It returns the winners in
// version order, contiguous from version: the commit loop checks each and
// retries at the version after the last. err is the failure to read
// version itself (wrapping objectstore.ErrNotExist when it is free again);
// a later version that fails to read ends the winners before it, left for
// the next attempt, whose PUT finds it taken.
func readWinners(ctx context.Context, store objectstore.Store, version int64) ([][]Action, error) {
	var out [][]Action
	for {
		var acts [winnerWindow][]Action
		var errs [winnerWindow]error
		var wg sync.WaitGroup
		for i := range winnerWindow {
			wg.Go(func() { acts[i], errs[i] = ReadCommit(ctx, store, version+int64(i)) })
		}
		wg.Wait()
		for i := range winnerWindow {
			if errs[i] != nil {
				if len(out) == 0 {
					return nil, errs[i]
				}
				return out, nil
			}
			out = append(out, acts[i])
		}
		version += winnerWindow
	}
}

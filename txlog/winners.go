package txlog

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/deltakit/deltakit/objectstore"
)

// serialWinners is how many versions a lost race reads one GET after the
// other before it lists the log for the rest.
const serialWinners = 3

// winnerReads bounds the GETs of winning commits a lost race has in flight
// at once, once it knows it is behind.
const winnerReads = 8

// readWinners reads the commits that took version and the versions after
// it, for a commit that found version taken. It GETs version and the
// versions after it one at a time, up to serialWinners of them: a free
// version (a cheap 404) ends the winners, the common case of one or two
// writers ahead. When all serialWinners are taken the writer is far
// behind: one LIST of the log after them names the rest, which are read
// winnerReads at a time, so that k winners cost about serialWinners + 1 +
// k/winnerReads round trips instead of k+1. (A writer that read them one
// GET at a time read them no faster than the others committed: one of 8
// writers read 81 winners for one commit. Listing after the second winner
// already cost more requests than it saved: 1.6 LISTs per commit at 8
// writers. Parallel GETs of versions not known to exist, 4 at a time,
// made a 16-writer test slower: most were 404s.) It returns the winners in version order, contiguous from version:
// the commit loop checks each and retries at the version after the last.
// err is the failure to read version itself (wrapping
// objectstore.ErrNotExist when it is free again); a later version that
// fails to read ends the winners before it, left for the next attempt,
// whose PUT finds it taken.
func readWinners(ctx context.Context, store objectstore.Store, version int64) ([][]Action, error) {
	var out [][]Action
	for i := range int64(serialWinners) {
		acts, err := ReadCommit(ctx, store, version+i)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			return out, nil
		}
		out = append(out, acts)
	}
	rest := listCommitsAfter(ctx, store, version+serialWinners-1)
	for len(rest) > 0 {
		n := min(len(rest), winnerReads)
		acts := make([][]Action, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { acts[i], errs[i] = ReadCommit(ctx, store, rest[i]) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				return out, nil
			}
			out = append(out, acts[i])
		}
		rest = rest[n:]
	}
	return out, nil
}

// listCommitsAfter lists the log after version and returns the commit
// versions from version+1 on that are contiguous. A failed LIST returns
// what it listed before failing: the winners it leaves out are found by the
// next attempt's PUT.
func listCommitsAfter(ctx context.Context, store objectstore.Store, version int64) []int64 {
	var out []int64
	next := version + 1
	for info, err := range store.List(ctx, LogPrefix, CommitKey(version)) {
		if err != nil {
			break
		}
		name, ok := strings.CutPrefix(info.Key, LogPrefix)
		if !ok {
			break
		}
		digits, ok := strings.CutSuffix(name, ".json")
		if !ok || len(digits) != 20 {
			continue // a checkpoint, a .crc, a compacted log file
		}
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || v < next {
			continue
		}
		if v != next {
			break
		}
		out = append(out, v)
		next++
	}
	return out
}

package table

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
)

// TestSparkReadsChanges: Spark's table_changes reads the change data feed
// of the tables deltakit wrote (buildCDFTable: DELETE by deletion vectors,
// copy-on-write and whole files, UPDATE, overwrite, append, a MERGE with
// every clause kind, an insert-only MERGE) and of the
// corpus CDF table's copy that deltakit changed (corpusCDFCopy) to the
// change rows computed in the test; one batch of Spark requests.
func TestSparkReadsChanges(t *testing.T) {
	spark := testsupport.Spark(t)
	root := t.TempDir()
	var checks []sparkCheck
	for _, tc := range []struct {
		name            string
		partitioned, dv bool
	}{{"flat-cow", false, false}, {"flat-dv", false, true}, {"part-cow", true, false}, {"part-dv", true, true}} {
		dir := filepath.Join(root, tc.name)
		store, err := objectstore.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		c := buildCDFTable(t, store, tc.name, tc.partitioned, tc.dv)
		q := fmt.Sprintf("SELECT id, city, v, _change_type, _commit_version FROM table_changes('delta.`%s`', 0, %d)", dir, c.tbl.Version())
		checks = append(checks, sparkCheck{tc.name, testsupport.SQLRequest(q),
			wantSparkRows(c.wantRows, []string{"id", "city", "v", "_change_type", "_commit_version"})})
	}
	_, dst, tbl, _, wantRows := corpusCDFCopy(t)
	q := fmt.Sprintf("SELECT id, name, CAST(birthday AS STRING) AS birthday, _change_type, _commit_version FROM table_changes('delta.`%s`', 4, %d)", dst, tbl.Version())
	checks = append(checks, sparkCheck{"corpus-copy", testsupport.SQLRequest(q),
		wantSparkRows(wantRows, []string{"id", "name", "birthday", "_change_type", "_commit_version"})})
	runSparkChecks(t, spark, checks)
}

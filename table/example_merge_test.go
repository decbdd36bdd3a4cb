package table_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"

	"github.com/deltakit/deltakit/table"
)

// An upsert by key on a change data feed table: matched rows are updated
// (or deleted, when the source says so), new keys inserted, and the change
// feed reads what the MERGE did.
func ExampleTable_Merge() {
	type Price struct {
		SKU   string  `delta:"sku,notnull"`
		Price float64 `delta:"price"`
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "prices")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sch, err := table.SchemaOf[Price]()
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, dir, sch, table.WithProperties(map[string]string{
		"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"}))
	if err != nil {
		log.Fatal(err)
	}
	if tbl, err = table.Append(ctx, tbl, []Price{{"apple", 1.0}, {"pear", 2.0}, {"plum", 3.0}}); err != nil {
		log.Fatal(err)
	}

	// A negative price in the source deletes the product.
	src, err := table.MergeStructs([]Price{{"pear", 2.5}, {"plum", -1}, {"kiwi", 0.5}})
	if err != nil {
		log.Fatal(err)
	}
	m := table.NewMerge(src, table.MergeOn("sku")).
		WhenMatched().If(table.Source("price").Lt(0.0)).Delete().
		WhenMatched().UpdateAll().
		WhenNotMatched().InsertAll()
	tbl, res, err := tbl.Merge(ctx, m)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", res.Version, "inserted", res.InsertedRows, "updated", res.UpdatedRows, "deleted", res.DeletedRows)

	var rows []string
	for r, err := range tbl.Scan(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		rows = append(rows, fmt.Sprint(r))
	}
	slices.Sort(rows)
	fmt.Println(rows)

	feed, err := tbl.Changes(ctx, res.Version, res.Version)
	if err != nil {
		log.Fatal(err)
	}
	var changes []string
	for r, err := range feed.Rows(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		changes = append(changes, fmt.Sprint(r[:3])) // sku, price, _change_type
	}
	slices.Sort(changes)
	for _, c := range changes {
		fmt.Println(c)
	}
	// Output:
	// version 2 inserted 1 updated 1 deleted 1
	// [[apple 1] [kiwi 0.5] [pear 2.5]]
	// [kiwi 0.5 insert]
	// [pear 2 update_preimage]
	// [pear 2.5 update_postimage]
	// [plum 3 delete]
}

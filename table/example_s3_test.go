package table_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// A table on S3 or MinIO. With the standard AWS environment alone
// (AWS_ENDPOINT_URL=http://localhost:9000, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) no option is needed: localhost and IP endpoints
// get path-style addressing and the region defaults to us-east-1. The
// options below say the same in code and win over the environment.
// (Not run by go test: it needs a server; TestS3TableConfigOnMinIO runs
// these calls against a real MinIO.)
func ExampleWithS3Endpoint() {
	ctx := context.Background()
	opts := []table.Option{
		table.WithS3Endpoint("http://localhost:9000"),
		table.WithS3PathStyle(true),
		table.WithS3Region("us-east-1"),
	}
	sch := schema.NewStruct(
		schema.NewField("ts", schema.Primitive(schema.Timestamp), false),
		schema.NewField("event", schema.Primitive(schema.String), true),
	)
	tbl, err := table.Create(ctx, "s3://my-bucket/tables/events", sch, opts...)
	if err != nil {
		log.Fatal(err)
	}
	tbl, err = tbl.AppendRows(ctx, [][]any{{time.Now(), "started"}}) // one WRITE commit, a conditional PUT
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version())
}

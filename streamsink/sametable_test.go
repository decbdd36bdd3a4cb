package streamsink

import (
	"testing"

	"github.com/deltakit/deltakit/txlog"
)

func TestSameMetadataProtocol(t *testing.T) {
	base := func() *txlog.Metadata {
		return &txlog.Metadata{
			ID: "id", SchemaString: `{"type":"struct","fields":[]}`,
			Format: txlog.Format{Provider: "parquet"},
		}
	}
	with := func(f func(*txlog.Metadata)) *txlog.Metadata { m := base(); f(m); return m }
	metas := []struct {
		name string
		b    *txlog.Metadata
		want bool
	}{
		{"identical", base(), true},
		{"empty configuration vs nil", with(func(m *txlog.Metadata) { m.Configuration = map[string]string{} }), true},
		{"empty partition columns vs nil", with(func(m *txlog.Metadata) { m.PartitionColumns = []string{} }), true},
		{"empty format options vs nil", with(func(m *txlog.Metadata) { m.Format.Options = map[string]string{} }), true},
		{"description ignored", with(func(m *txlog.Metadata) { m.Description = "d" }), true},
		{"id", with(func(m *txlog.Metadata) { m.ID = "other" }), false},
		{"schema", with(func(m *txlog.Metadata) { m.SchemaString = "{}" }), false},
		{"partition columns", with(func(m *txlog.Metadata) { m.PartitionColumns = []string{"p"} }), false},
		{"configuration", with(func(m *txlog.Metadata) { m.Configuration = map[string]string{"delta.appendOnly": "true"} }), false},
		{"format", with(func(m *txlog.Metadata) { m.Format.Provider = "orc" }), false},
		{"nil", nil, false},
	}
	for _, c := range metas {
		if got := sameMetadata(base(), c.b); got != c.want {
			t.Errorf("sameMetadata %s = %v, want %v", c.name, got, c.want)
		}
	}
	p := &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}
	protos := []struct {
		name string
		b    *txlog.Protocol
		want bool
	}{
		{"identical", &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7}, true},
		{"empty features vs nil", &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{}, WriterFeatures: []string{}}, true},
		{"writer version", &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 5}, false},
		{"writer feature", &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, WriterFeatures: []string{"invariants"}}, false},
		{"nil", nil, false},
	}
	for _, c := range protos {
		if got := sameProtocol(p, c.b); got != c.want {
			t.Errorf("sameProtocol %s = %v, want %v", c.name, got, c.want)
		}
	}
}

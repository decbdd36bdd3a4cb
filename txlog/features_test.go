package txlog

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestCheckReadable(t *testing.T) {
	tests := []struct {
		name     string
		p        Protocol
		err      error
		features []string
	}{
		{"1/2", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, nil},
		{"2/5 column mapping", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, nil, nil},
		{"3/7 supported", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "columnMapping", "timestampNtz",
			"v2Checkpoint", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview"}}, nil, nil},
		{"3/7 unknown", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"variantType", "deletionVectors", "blahabl"}},
			ErrUnsupportedFeature, []string{"blahabl", "variantType"}},
		{"5/7 names its unknown feature", Protocol{MinReaderVersion: 5, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping", "blahabl"}},
			ErrUnsupportedFeature, []string{"blahabl"}},
		{"99/7", Protocol{MinReaderVersion: 99, MinWriterVersion: 7, ReaderFeatures: []string{}}, ErrUnsupportedProtocol, nil},
		{"0/0", Protocol{}, ErrUnsupportedProtocol, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkReadable(&tt.p)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("checkReadable = %v, want %v", err, tt.err)
			}
			var fe *UnsupportedFeatureError
			if errors.As(err, &fe) && (!slices.Equal(fe.Features, tt.features) || !fe.Reader) {
				t.Errorf("features %v reader %v, want %v", fe.Features, fe.Reader, tt.features)
			}
		})
	}
}

func TestCheckWritable(t *testing.T) {
	tests := []struct {
		name     string
		p        Protocol
		err      error
		features []string
	}{
		{"1/2", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, nil},
		{"1/4 legacy cdf and generated columns", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, nil, nil},
		{"1/7 row tracking and an unknown feature", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "rowTracking", "liquid"}},
			ErrUnsupportedFeature, []string{"liquid"}},
		{"3/7 dv", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}, nil, nil},
		{"1/8", Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, ErrUnsupportedProtocol, nil},
		{"unreadable", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"catalogManaged"}, WriterFeatures: []string{"catalogManaged"}},
			ErrUnsupportedFeature, []string{"catalogManaged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkWritable(&tt.p)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("checkWritable = %v, want %v", err, tt.err)
			}
			var fe *UnsupportedFeatureError
			if errors.As(err, &fe) && !slices.Equal(fe.Features, tt.features) {
				t.Errorf("features %v, want %v", fe.Features, tt.features)
			}
		})
	}
}

func TestCheckWritableTable(t *testing.T) {
	p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 4}
	plain := &Metadata{SchemaString: replayTestSchema}
	if err := CheckWritableTable(p, plain); err != nil {
		t.Errorf("inactive legacy features: %v", err)
	}
	withCDF := &Metadata{SchemaString: replayTestSchema, Configuration: map[string]string{PropEnableChangeDataFeed: "true", "delta.constraints.positive": "id > 0"}}
	if err := CheckWritableTable(p, withCDF); err != nil {
		// CHECK constraints are enforced by table's writes, and DELETE and
		// UPDATE write the change data files of an active change data feed.
		t.Errorf("active cdf and constraints: %v", err)
	}
	var fe *UnsupportedFeatureError
	generated := &Metadata{SchemaString: `{"type":"struct","fields":[{"name":"a","type":{"type":"struct","fields":[{"name":"b","type":"long","nullable":true,"metadata":{"delta.generationExpression":"1"}}]},"nullable":true,"metadata":{}}]}`}
	if err := CheckWritableTable(p, generated); !errors.As(err, &fe) || !slices.Equal(fe.Features, []string{"generatedColumns"}) {
		t.Errorf("nested generated column: %v", err)
	}
	// the same metadata on a writer version that does not have the feature is fine
	if err := CheckWritableTable(&Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, withCDF); err != nil {
		t.Errorf("cdf property without the feature: %v", err)
	}
}

func TestParseInterval(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"interval 1 week", 7 * 24 * time.Hour, true},
		{"interval 30 days", 30 * 24 * time.Hour, true},
		{"INTERVAL 2 DAYS 12 HOURS", 60 * time.Hour, true},
		{"7 days", 7 * 24 * time.Hour, true},
		{"interval 1 hour", time.Hour, true},
		{"interval 0 seconds", 0, true},
		{"interval 500 milliseconds", 500 * time.Millisecond, true},
		{"interval 1 month", 0, false},
		{"interval", 0, false},
		{"interval x days", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseInterval(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseInterval(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// TestProtocolForPropertyFeatures: every WriterFeatures row turned on by a
// "key=value" property gets its feature into ProtocolFor's protocol, and
// CheckWritableProtocol accepts it exactly when the table does not refuse
// it, naming the feature otherwise.
func TestProtocolForPropertyFeatures(t *testing.T) {
	n := 0
	for _, f := range WriterFeatures() {
		key, values, ok := f.PropertyTrigger()
		if !ok {
			continue
		}
		for _, v := range values {
			n++
			p := ProtocolFor(nil, nil, map[string]string{key: v})
			if !slices.Contains(p.EffectiveWriterFeatures(), f.Name) {
				t.Errorf("%s=%s: protocol %+v lacks %s", key, v, p, f.Name)
			}
			err := CheckWritableProtocol(p)
			var ue *UnsupportedFeatureError
			switch {
			case f.Support == WriterRefused && (!errors.As(err, &ue) || !slices.Contains(ue.Features, f.Name)):
				t.Errorf("%s=%s: CheckWritableProtocol = %v, want refusal naming %s", key, v, err, f.Name)
			case f.Support != WriterRefused && err != nil:
				t.Errorf("%s=%s: CheckWritableProtocol = %v, want nil", key, v, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d property settings in WriterFeatures", n)
	}
	p := ProtocolFor(nil, nil, map[string]string{"delta.checkpointPolicy": "v2"})
	if p.MinReaderVersion != 3 || !slices.Contains(p.ReaderFeatures, FeatureV2Checkpoint) {
		t.Errorf("checkpointPolicy=v2: protocol %+v, want reader 3 with v2Checkpoint", p)
	}
	if p := ProtocolFor(nil, nil, map[string]string{"delta.checkpointPolicy": "classic"}); p.MinWriterVersion != 2 {
		t.Errorf("checkpointPolicy=classic: protocol %+v, want (1,2)", p)
	}
}

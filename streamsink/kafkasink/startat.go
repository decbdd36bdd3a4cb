package kafkasink

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// StartAt says where a partition the table holds no offset for starts
// consuming (WithStartAt). A partition the table holds an offset for
// always resumes at that offset. The zero value is StartEarliest.
type StartAt struct {
	kind startKind
	t    time.Time
}

type startKind int

const (
	startEarliest startKind = iota
	startLatest
	startTime
)

// The Stats.StartOffsets values of partitions that started without an
// offset in the table.
const (
	StartOffsetEarliest int64 = -2 // the partition's first record (StartEarliest)
	StartOffsetLatest   int64 = -1 // the partition's end when the run started (StartLatest)
	StartOffsetTime     int64 = -3 // the first record at or after the StartAtTime time
)

// StartEarliest starts at the partition's first record (the default).
func StartEarliest() StartAt { return StartAt{kind: startEarliest} }

// StartLatest starts at the partition's end: only records produced after
// the partition was assigned are consumed.
func StartLatest() StartAt { return StartAt{kind: startLatest} }

// StartAtTime starts at the first record whose timestamp (the producer's
// CreateTime, or the broker's LogAppendTime on topics configured so) is t or
// later, with millisecond precision; when no record is that recent, at
// the partition's end. Kafka finds the offset from the partition's time
// index (ListOffsets by timestamp).
func StartAtTime(t time.Time) StartAt { return StartAt{kind: startTime, t: t} }

// String returns "earliest", "latest" or the time in RFC 3339 (UTC,
// milliseconds): the forms deltactl's --start-at takes.
func (s StartAt) String() string {
	switch s.kind {
	case startLatest:
		return "latest"
	case startTime:
		return s.t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return "earliest"
}

// offset returns the kgo start offset and its Stats.StartOffsets value.
func (s StartAt) offset() (kgo.Offset, int64) {
	switch s.kind {
	case startLatest:
		return kgo.NewOffset().AtEnd(), StartOffsetLatest
	case startTime:
		return kgo.NewOffset().AfterMilli(s.t.UnixMilli()), StartOffsetTime
	}
	return kgo.NewOffset().AtStart(), StartOffsetEarliest
}

// WithStartAt sets where partitions the table holds no offset for start
// (default StartEarliest); partitions with an offset in the table resume
// there. In a consumer group it applies to each partition when it is
// assigned and the table holds no offset for it.
func WithStartAt(s StartAt) Option { return func(c *config) { c.startAt = s } }

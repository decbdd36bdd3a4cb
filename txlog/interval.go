package txlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// intervalUnits are the units ParseInterval accepts, singular.
var intervalUnits = map[string]time.Duration{
	"nanosecond":  time.Nanosecond,
	"microsecond": time.Microsecond,
	"millisecond": time.Millisecond,
	"second":      time.Second,
	"minute":      time.Minute,
	"hour":        time.Hour,
	"day":         24 * time.Hour,
	"week":        7 * 24 * time.Hour,
}

// ParseInterval parses a Delta interval table property such as
// "interval 1 week", "interval 30 days", "interval 2 days 12 hours" or
// "7 days" (the "interval" keyword is optional, as in Spark's
// DeltaConfigs). Units: nanosecond(s), microsecond(s), millisecond(s),
// second(s), minute(s), hour(s), day(s), week(s), singular or plural, any
// case. Months and years are rejected (they have no fixed length). Returns an
// error for anything else.
func ParseInterval(s string) (time.Duration, error) {
	fields := strings.Fields(strings.ToLower(s))
	if len(fields) > 0 && fields[0] == "interval" {
		fields = fields[1:]
	}
	if len(fields) == 0 || len(fields)%2 != 0 {
		return 0, fmt.Errorf("txlog: invalid interval %q", s)
	}
	var total time.Duration
	for i := 0; i < len(fields); i += 2 {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("txlog: invalid interval %q: %v", s, err)
		}
		unit, ok := intervalUnits[strings.TrimSuffix(fields[i+1], "s")]
		if !ok {
			return 0, fmt.Errorf("txlog: invalid interval %q: unit %q", s, fields[i+1])
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}

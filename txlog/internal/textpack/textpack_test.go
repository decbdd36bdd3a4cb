package textpack

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestPackStatsRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		stats string
		// packed: the text is split into skeleton and literals (not raw)
		packed bool
		// skel is the expected skeleton, when set
		skel string
	}{
		{"empty object", `{}`, true, `{}`},
		{"flat", `{"numRecords":1000,"a":-8,"b":0}`, true, "{\"numRecords\":\x02,\"a\":\x02,\"b\":\x02}"},
		{"nested with strings", `{"numRecords":3,"minValues":{"s":"abc","t":{"u":"x"}},"nullCount":{"s":0,"t":{"u":1}}}`, true, ""},
		{"timestamps and dates", `{"minValues":{"ts":"2024-01-01T00:00:00.000","tz":"2024-02-29T23:59:59.999Z","d":"1970-01-01","old":"0001-01-01"}}`, true,
			"{\"minValues\":{\"ts\":\x05,\"tz\":\x06,\"d\":\x04,\"old\":\x04}}"},
		{"invalid dates stay strings", `{"d":"2023-02-29","t":"2024-01-01T24:00:00.000","m":"2024-13-01","x":"2024-01-01T00:00:00.000000"}`, true,
			"{\"d\":\x01,\"t\":\x01,\"m\":\x01,\"x\":\x01}"},
		{"non-canonical numbers", `{"a":-0,"b":007,"c":1.5e10,"d":12345678901234567890123,"e":-,"f":1E+3}`, true,
			"{\"a\":\x03,\"b\":\x03,\"c\":\x03,\"d\":\x03,\"e\":\x03,\"f\":\x03}"},
		{"escapes and unicode", `{"minValues":{"s":"a\"b\\c\u00e9","é":"ünï✓","k\"ey":"v"}}`, true, ""},
		{"whitespace", "{ \"a\" : 1 ,\n\t\"b\":\r\"x\" }", true, "{ \"a\" : \x02 ,\n\t\"b\":\r\x01 }"},
		{"true false null", `{"a":true,"b":false,"c":null,"d":[1,"x",null]}`, true, "{\"a\":true,\"b\":false,\"c\":null,\"d\":[\x02,\x01,null]}"},
		{"not json", `hello 12 "world`, false, ""},
		{"marker byte", "{\"a\":\"\x01\"}", false, ""},
		{"trailing backslash", `{"a":"b\`, false, ""},
		{"bare string", `"2024-01-01"`, true, "\x04"},
		{"key-like value", `{"a":"b" : 1}`, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skel, lit, ok := PackStats(tc.stats, nil, nil)
			if ok != tc.packed {
				t.Fatalf("PackStats ok = %v, want %v", ok, tc.packed)
			}
			if !ok {
				return
			}
			if tc.skel != "" && string(skel) != tc.skel {
				t.Errorf("skeleton %q, want %q", skel, tc.skel)
			}
			sk := NewSkeleton(string(skel))
			got, ok := sk.Unpack(nil, lit)
			if !ok || string(got) != tc.stats {
				t.Fatalf("unpack = %q, %v; want %q", got, ok, tc.stats)
			}
			// packing along the skeleton gives the same literals
			lit2, ok := PackWith(sk, tc.stats, nil)
			if !ok || string(lit2) != string(lit) {
				t.Fatalf("PackWith = %q, %v; want %q", lit2, ok, lit)
			}
		})
	}
}

// TestPackWith packs texts along the skeleton of another text: a text
// that does not fit is refused, one that fits unpacks exactly.
func TestPackWith(t *testing.T) {
	base := `{"numRecords":10,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000Z","s":"abc","x":1.5}}`
	tests := []struct {
		text string
		fits bool
	}{
		{base, true},
		{`{"numRecords":99,"minValues":{"d":"1999-12-31","t":"2030-06-01T12:34:56.789Z","s":"a\"b\\","x":-2e5}}`, true},
		{`{"numRecords":99,"minValues":{"d":"1999-12-31","t":"2030-06-01T12:34:56.789Z","s":"tail\\"}}`, false},
		{`{"numRecords":010,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000Z","s":"abc","x":1.5}}`, false},
		{`{"numRecords":10,"minValues":{"d":"2024-02-30","t":"2024-01-01T00:00:00.000Z","s":"abc","x":1.5}}`, false},
		{`{"numRecords":10,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000","s":"abc","x":1.5}}`, false},
		{`{"numRecords":10,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000Z","s":"abc","x":1.5}} `, false},
		{`{"numRecords":10,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000Z","s":"ab`, false},
		{`{"numRecords":10,"minValues":{"d":"2024-01-01","t":"2024-01-01T00:00:00.000Z","s":"\u0001\u0002","x":1}}`, true},
	}
	skel, _, ok := PackStats(base, nil, nil)
	if !ok {
		t.Fatal("base does not pack")
	}
	sk := NewSkeleton(string(skel))
	for _, tc := range tests {
		lit, ok := PackWith(sk, tc.text, nil)
		if ok != tc.fits {
			t.Errorf("PackWith(%q) ok = %v, want %v", tc.text, ok, tc.fits)
			continue
		}
		if !ok {
			continue
		}
		if got, ok := sk.Unpack(nil, lit); !ok || string(got) != tc.text {
			t.Errorf("unpack = %q, %v; want %q", got, ok, tc.text)
		}
	}
}

func FuzzPackStats(f *testing.F) {
	for _, s := range []string{`{"numRecords":1,"minValues":{"a":"2024-01-01T00:00:00.000Z"}}`, `{"a":-0.5e3}`, `"x\"`, "\x01", `{"d":"0000-03-01"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		skel, lit, ok := PackStats(s, nil, nil)
		if !ok {
			return
		}
		sk := NewSkeleton(string(skel))
		got, ok := sk.Unpack(nil, lit)
		if !ok || string(got) != s {
			t.Fatalf("round trip of %q gave %q, %v", s, got, ok)
		}
		// a variant of s (one byte changed) packed along s's skeleton
		if len(s) > 0 {
			v := []byte(s)
			v[len(v)/2] ^= 1
			if lit, ok := PackWith(sk, string(v), nil); ok {
				if got, ok := sk.Unpack(nil, lit); !ok || string(got) != string(v) {
					t.Fatalf("PackWith round trip of %q gave %q, %v", v, got, ok)
				}
			}
		}
	})
}

func TestDateRoundTrip(t *testing.T) {
	for _, s := range []string{"0000-01-01", "0000-02-29", "1600-02-29", "1899-12-31", "1969-12-31", "1970-01-01", "2000-02-29", "2024-12-31", "9999-12-31"} {
		d, ok := ParseDate(s)
		if !ok {
			t.Fatalf("ParseDate(%q) failed", s)
		}
		if got := string(AppendDate(nil, d)); got != s {
			t.Errorf("date %q -> %d -> %q", s, d, got)
		}
	}
	if d, _ := ParseDate("1970-01-02"); d != 1 {
		t.Errorf("1970-01-02 is day %d, want 1", d)
	}
	if ms, _ := ParseTimeMillis("1969-12-31T23:59:59.999"); ms != -1 {
		t.Errorf("1969-12-31T23:59:59.999 is %d ms, want -1", ms)
	}
	for _, s := range []string{"1900-02-29", "2023-04-31", "2024-00-10", "2024-1-010", "20x4-01-01"} {
		if _, ok := ParseDate(s); ok {
			t.Errorf("ParseDate(%q) succeeded", s)
		}
	}
}

func TestPackPathRoundTrip(t *testing.T) {
	tests := []struct {
		path, skel string
		packed     bool
	}{
		{"part-00042-1a2b3c4d-002a-4abc-8def-0123456789ab-c000.snappy.parquet",
			"part-\x01-\x01-\x01-\x01-\x01-\x01-\x01.snappy.parquet", true},
		{"day=2024-01-01/a.parquet", "\x01y=\x01-\x01-\x01/a.parquet", true},
		{"odd-123", "o\x01-\x01", true},
		{"ABCDEF-x", "ABCDEF-x", true},
		{"s3://bucket/dir/f0e1.parquet", "s3://bucket/dir/\x01.parquet", true},
		{"", "", true},
		{"bad\x01path", "", false},
	}
	for _, tc := range tests {
		skel, lit, ok := PackPath(tc.path, nil, nil)
		if ok != tc.packed {
			t.Errorf("PackPath(%q) ok = %v", tc.path, ok)
			continue
		}
		if !ok {
			continue
		}
		if string(skel) != tc.skel {
			t.Errorf("PackPath(%q) skeleton %q, want %q", tc.path, skel, tc.skel)
		}
		if got, ok := UnpackPath(nil, string(skel), lit); !ok || string(got) != tc.path {
			t.Errorf("UnpackPath = %q, %v; want %q", got, ok, tc.path)
		}
	}
}

func FuzzPackPath(f *testing.F) {
	f.Add("part-00042-1a2b3c4d-c000.snappy.parquet")
	f.Add("abc")
	f.Fuzz(func(t *testing.T, p string) {
		skel, lit, ok := PackPath(p, nil, nil)
		if !ok {
			return
		}
		if got, ok := UnpackPath(nil, string(skel), lit); !ok || string(got) != p {
			t.Fatalf("round trip of %q gave %q, %v", p, got, ok)
		}
	})
}

// TestTimeMillisFormat compares appendTimeMillis and AppendDate with the
// time package over years 0 to 9999 and round-trips through
// ParseTimeMillis.
func TestTimeMillisFormat(t *testing.T) {
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC).UnixMilli()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ms := range append([]int64{lo, hi, -1, 0, 1, 86_399_999, 86_400_000}, func() (out []int64) {
		for range 20000 {
			out = append(out, lo+rng.Int64N(hi-lo+1))
		}
		return out
	}()...) {
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000")
		if got := string(appendTimeMillis([]byte("x"), ms)); got != "x"+want {
			t.Fatalf("appendTimeMillis(%d) = %q, want %q", ms, got, "x"+want)
		}
		if back, ok := ParseTimeMillis(want); !ok || back != ms {
			t.Fatalf("ParseTimeMillis(%q) = %d, %v, want %d", want, back, ok, ms)
		}
	}
}

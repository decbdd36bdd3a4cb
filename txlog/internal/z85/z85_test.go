package z85

import (
	"slices"
	"testing"
)

func TestZ85(t *testing.T) {
	// ZeroMQ RFC 32 test vector
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	enc, err := Encode(raw)
	if err != nil || enc != "HelloWorld" {
		t.Fatalf("Encode = %q, %v", enc, err)
	}
	dec, err := Decode("HelloWorld")
	if err != nil || !slices.Equal(dec, raw) {
		t.Fatalf("Decode = %x, %v", dec, err)
	}
	for _, bad := range []string{"Hell", "Hello Worl", "#####"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
	if _, err := Encode([]byte{1, 2, 3}); err == nil {
		t.Error("Encode of 3 bytes accepted")
	}
}

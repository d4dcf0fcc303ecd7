package receiver

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// countingReader hands out at most chunk bytes per Read and counts the
// calls, as a transport whose every read costs a round trip would.
type countingReader struct {
	r     io.Reader
	chunk int
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p[:min(len(p), c.chunk)])
}

func TestReadAllReadsADeclaredBodyAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		declared  int64
		wantReads int // 0: not checked; io.ReadAll takes 3 for 800 bytes
	}{
		{"declared, over io.ReadAll's first 512 bytes", 800, 800, 2},
		{"declared, small", 300, 300, 2},
		{"unknown length", 800, -1, 0},
		{"declared short", 2000, 100, 0},
		{"declared long", 100, 2000, 2},
		{"empty", 0, 0, 1},
		{"over the first read's bound", 3 * maxFirstRead, 3 * maxFirstRead, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Repeat("x", tc.size)
			r := &countingReader{r: strings.NewReader(want), chunk: 1 << 20}
			got, err := readAll(r, tc.declared)
			if err != nil || !bytes.Equal(got, []byte(want)) {
				t.Fatalf("readAll = %d bytes, %v; want the %d bytes", len(got), err, tc.size)
			}
			if tc.wantReads > 0 && r.reads != tc.wantReads {
				t.Errorf("%d reads, want %d", r.reads, tc.wantReads)
			}
		})
	}
}

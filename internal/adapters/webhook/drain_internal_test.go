package webhook

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// endlessBody is a response body that never ends and counts what was read.
type endlessBody struct{ read int64 }

func (b *endlessBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	b.read += int64(len(p))
	return len(p), nil
}

func (*endlessBody) Close() error { return nil }

func TestDrainCapped(t *testing.T) {
	t.Parallel()
	for _, limit := range []int64{0, 1, 1000, 64 << 10} {
		body := &endlessBody{}
		drainCapped(&http.Response{Body: io.NopCloser(body)}, limit)
		require.Equal(t, limit, body.read)
	}
}

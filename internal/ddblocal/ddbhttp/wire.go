package ddbhttp

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The HTTP layer around the JSON protocol, as DynamoDB serves it: request
// bodies compressed with Content-Encoding gzip or deflate (botocore compresses
// requests when asked to), compressed answers for clients that send
// Accept-Encoding, and CORS headers for browser clients. The behaviours
// follow what DynamoDB answers (github.com/scylladb/scylladb's
// test/alternator test_compressed_request.py, test_compressed_response.py
// and test_cors.py, checked against DynamoDB); none of it is in the API
// reference.

// compressThreshold is the smallest answer DynamoDB compresses.
const compressThreshold = 4096

// errBadEncoding is a request body that does not decode with its
// Content-Encoding: DynamoDB answers 500 then.
var errBadEncoding = errors.New("request body does not decode with its Content-Encoding")

// decodeBody reads the request body through its Content-Encoding, at most
// limit bytes after decompression. An unknown encoding or a corrupt,
// truncated or trailing-garbage stream is errBadEncoding; too large a body is
// *http.MaxBytesError.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return io.ReadAll(body)
	case "gzip", "deflate":
	default:
		return nil, errBadEncoding
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var zr io.Reader
	switch enc {
	case "gzip":
		// Several gzip members in a row are one stream (RFC 1952).
		g, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, errBadEncoding
		}
		zr = g
	case "deflate":
		z, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, errBadEncoding
		}
		zr = z
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, errBadEncoding
	}
	if int64(len(out)) > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return out, nil
}

// acceptedEncoding picks the answer's encoding from an Accept-Encoding
// header the way DynamoDB does: gzip and deflate, by quality (a quality that
// does not parse counts as 1, one above 1 as 1, zero or below excludes), an
// encoding named outright before one that "*" admits, then the header's
// order, and gzip before deflate under "*". Only the first Accept-Encoding
// header counts. It returns "" for no compression.
func acceptedEncoding(header string) string {
	type choice struct {
		q        float64
		explicit bool
		pos      int
	}
	best := map[string]choice{}
	star := -1.0
	for pos, part := range strings.Split(header, ",") {
		params := strings.Split(part, ";")
		name := strings.ToLower(strings.TrimSpace(params[0]))
		q := 1.0
		for _, p := range params[1:] {
			_, v, ok := strings.Cut(p, "q=")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			switch {
			case err != nil, f > 1:
				q = 1
			default:
				q = f
			}
			break
		}
		switch name {
		case "gzip", "deflate":
			if c, seen := best[name]; !seen || q > c.q {
				best[name] = choice{q: q, explicit: true, pos: pos}
			}
		case "*":
			star = max(star, q)
		}
	}
	for i, name := range []string{"gzip", "deflate"} {
		if _, named := best[name]; !named && star > 0 {
			best[name] = choice{q: star, pos: 1<<20 + i}
		}
	}
	pick, pickC := "", choice{}
	for _, name := range []string{"gzip", "deflate"} {
		c, ok := best[name]
		if !ok || c.q <= 0 {
			continue
		}
		if pick == "" || c.q > pickC.q || (c.q == pickC.q && c.explicit && !pickC.explicit) ||
			(c.q == pickC.q && c.explicit == pickC.explicit && c.pos < pickC.pos) {
			pick, pickC = name, c
		}
	}
	return pick
}

// compress encodes body with enc ("gzip" or "deflate", the zlib format).
func compress(enc string, body []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	if enc == "gzip" {
		w = gzip.NewWriter(&buf)
	} else {
		w = zlib.NewWriter(&buf)
	}
	_, _ = w.Write(body)
	_ = w.Close()
	return buf.Bytes()
}

// setCORS adds DynamoDB's CORS headers to the answer of a request that
// carries an Origin; a preflight (OPTIONS) also gets the allowed methods
// and headers it asked for and how long to keep them.
func setCORS(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") == "" {
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "x-amzn-RequestId,x-amzn-ErrorType,x-amz-crc32,Date")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Max-Age", "172800")
		if m := r.Header.Get("Access-Control-Request-Method"); m != "" {
			h.Set("Access-Control-Allow-Methods", m)
		}
		if hd := r.Header.Get("Access-Control-Request-Headers"); hd != "" {
			h.Set("Access-Control-Allow-Headers", hd)
		}
	}
}

package paritytest

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

const docHTTP = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.LowLevelAPI.html"

// Wire is a raw HTTP route to an endpoint, for the cases of the HTTP layer
// that no SDK call can express (request and answer compression, CORS, the
// answer's framing). Requests are signed with SigV4, so a real endpoint
// takes them too.
type Wire struct {
	URL         string
	HTTPClient  *http.Client
	Credentials aws.CredentialsProvider
	Region      string
	// NewClient makes an SDK client of the same endpoint, for setup.
	NewClient func(t *testing.T) Client
}

// ExerciseWire runs the HTTP-layer cases (issue 20, item 9) against w.
// They have no in-process form: the engine has no wire.
func ExerciseWire(ctx context.Context, t *testing.T, w Wire) {
	for _, c := range wireCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("follows %s", c.doc)
			c.run(ctx, t, w)
		})
	}
}

type wireCase struct {
	name string
	doc  string
	run  func(ctx context.Context, t *testing.T, w Wire)
}

// post sends one signed DynamoDB request with extra headers; encoding
// compresses the body ("gzip", "deflate", or "" for none).
func (w Wire) post(ctx context.Context, t *testing.T, op string, payload any, encoding string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	switch encoding {
	case "gzip":
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		require.NoError(t, zw.Close())
		body = b.Bytes()
	case "deflate":
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		_, _ = zw.Write(body)
		require.NoError(t, zw.Close())
		body = b.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return w.send(ctx, t, req, body)
}

func (w Wire) send(ctx context.Context, t *testing.T, req *http.Request, body []byte) (*http.Response, []byte) {
	t.Helper()
	creds, err := w.Credentials.Retrieve(ctx)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	require.NoError(t, v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", w.Region, time.Now()))
	client := w.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	// No transparent decompression: the cases read the answer as sent.
	tr := &http.Transport{DisableCompression: true}
	if base, ok := client.Transport.(*http.Transport); ok {
		tr = base.Clone()
		tr.DisableCompression = true
	}
	resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, out
}

func wireTable(ctx context.Context, t *testing.T, w Wire) *bundle {
	return setup(ctx, t, w.NewClient, layoutHashOnly)
}

func putPayload(table, pk, v string) map[string]any {
	return map[string]any{"TableName": table, "Item": map[string]any{"pk": map[string]string{"S": pk}, "v": map[string]string{"S": v}}}
}

func wireCases() []wireCase {
	return []wireCase{
		// A request body with Content-Encoding gzip or deflate (zlib) is
		// decompressed (botocore compresses requests when asked to); a
		// body that does not decode, or an unknown encoding, answers 500
		// and writes nothing.
		{"CompressedRequest", docHTTP, func(ctx context.Context, t *testing.T, w Wire) {
			b := wireTable(ctx, t, w)
			for _, enc := range []string{"gzip", "deflate"} {
				resp, body := w.post(ctx, t, "PutItem", putPayload(b.table, enc, "x"), enc, nil)
				require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
				require.Equal(t, s("x"), b.get(t, item{"pk": s(enc)})["v"])
			}
			resp, _ := w.post(ctx, t, "PutItem", putPayload(b.table, "garbage", "x"), "", map[string]string{"Content-Encoding": "garbage"})
			require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
			resp, _ = w.post(ctx, t, "PutItem", putPayload(b.table, "notgzip", "x"), "", map[string]string{"Content-Encoding": "gzip"})
			require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
			require.Nil(t, b.get(t, item{"pk": s("garbage")}))
			require.Nil(t, b.get(t, item{"pk": s("notgzip")}))
		}},
		// An answer of 4 KB or more is compressed with the encoding the
		// request's Accept-Encoding prefers (gzip, deflate); a smaller one,
		// or one asked with identity or an encoding DynamoDB lacks, is not.
		{"CompressedAnswer", docHTTP, func(ctx context.Context, t *testing.T, w Wire) {
			b := wireTable(ctx, t, w)
			b.put(t, item{"pk": s("big"), "v": s(repeat("x", 5000))})
			b.put(t, item{"pk": s("small"), "v": s("x")})
			get := func(pk, accept string) (string, map[string]any) {
				resp, body := w.post(ctx, t, "GetItem", map[string]any{"TableName": b.table, "Key": map[string]any{"pk": map[string]string{"S": pk}}}, "",
					map[string]string{"Accept-Encoding": accept})
				require.Equal(t, http.StatusOK, resp.StatusCode)
				enc := resp.Header.Get("Content-Encoding")
				var r io.Reader = bytes.NewReader(body)
				switch enc {
				case "gzip":
					zr, err := gzip.NewReader(r)
					require.NoError(t, err)
					r = zr
				case "deflate":
					zr, err := zlib.NewReader(r)
					require.NoError(t, err)
					r = zr
				}
				var out map[string]any
				require.NoError(t, json.NewDecoder(r).Decode(&out))
				require.Contains(t, out, "Item")
				return enc, out
			}
			for accept, want := range map[string]string{
				"gzip": "gzip", "deflate": "deflate", "identity": "", "br": "", "x-gzip": "",
				"gzip, deflate": "gzip", "br, identity, deflate, gzip": "deflate", "gzip;q=0.5, deflate": "deflate",
				"*": "gzip", "*, deflate": "deflate", "gzip;q=0": "",
			} {
				enc, _ := get("big", accept)
				require.Equal(t, want, enc, "Accept-Encoding: %s", accept)
			}
			enc, _ := get("small", "gzip")
			require.Empty(t, enc, "a small answer is not compressed")
		}},
		// CORS: a request with an Origin gets Access-Control-Allow-Origin *;
		// a preflight also gets the method and headers it asked for.
		{"CORS", docHTTP, func(ctx context.Context, t *testing.T, w Wire) {
			resp, _ := w.post(ctx, t, "ListTables", map[string]any{"Limit": 1}, "", map[string]string{"Origin": "http://example.com"})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
			require.NotEmpty(t, resp.Header.Get("Access-Control-Expose-Headers"))
			req, err := http.NewRequestWithContext(ctx, http.MethodOptions, w.URL, nil)
			require.NoError(t, err)
			req.Header.Set("Origin", "http://example.com")
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "x-amz-target, content-type")
			resp, _ = w.send(ctx, t, req, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
			require.Equal(t, "POST", resp.Header.Get("Access-Control-Allow-Methods"))
			require.Equal(t, "x-amz-target, content-type", resp.Header.Get("Access-Control-Allow-Headers"))
			require.NotEmpty(t, resp.Header.Get("Access-Control-Max-Age"))
		}},
		// An error answer is JSON with DynamoDB's media type too; a request
		// without TableName is a ValidationException.
		{"ErrorFraming", docHTTP, func(ctx context.Context, t *testing.T, w Wire) {
			resp, body := w.post(ctx, t, "PutItem", map[string]any{"Item": map[string]any{"pk": map[string]string{"S": "x"}}}, "", nil)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, "application/x-amz-json-1.0", resp.Header.Get("Content-Type"))
			require.Contains(t, string(body), "ValidationException")
		}},
		// TagResource and UntagResource answer 200 with an empty body.
		{"TagResourceEmptyAnswer", docTagging, func(ctx context.Context, t *testing.T, w Wire) {
			b := wireTable(ctx, t, w)
			d, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
			require.NoError(t, err)
			arn := aws.ToString(d.Table.TableArn)
			resp, body := w.post(ctx, t, "TagResource", map[string]any{"ResourceArn": arn, "Tags": []map[string]string{{"Key": "k", "Value": "v"}}}, "", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			require.Empty(t, body)
			resp, body = w.post(ctx, t, "UntagResource", map[string]any{"ResourceArn": arn, "TagKeys": []string{"k"}}, "", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			require.Empty(t, body)
		}},
	}
}

// endpointer is DescribeEndpoints: the engine, the SDK client and the HTTP
// face's clients all have it.
type endpointer interface {
	DescribeEndpoints(ctx context.Context, in *dynamodb.DescribeEndpointsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeEndpointsOutput, error)
}

// httpCases: the part of the HTTP layer an SDK call expresses (issue 20,
// item 9; the rest is ExerciseWire's).
func httpCases() []parityCase {
	return []parityCase{
		// DescribeEndpoints answers one endpoint with its cache period.
		{"DescribeEndpoints", "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeEndpoints.html", func(ctx context.Context, t *testing.T, nc func(*testing.T) Client) {
			c, ok := nc(t).(endpointer)
			require.True(t, ok, "the client has no DescribeEndpoints")
			out, err := c.DescribeEndpoints(ctx, &dynamodb.DescribeEndpointsInput{})
			require.NoError(t, err)
			require.Len(t, out.Endpoints, 1)
			require.NotEmpty(t, aws.ToString(out.Endpoints[0].Address))
			require.Positive(t, out.Endpoints[0].CachePeriodInMinutes)
		}},
	}
}

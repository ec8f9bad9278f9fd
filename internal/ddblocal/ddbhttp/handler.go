package ddbhttp

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultMaxBodyBytes is the largest request body accepted by default: 16 MB
// (DynamoDB's BatchWriteItem limit) with room for JSON framing.
const DefaultMaxBodyBytes = 17 << 20

// contentType is the media type of the DynamoDB JSON 1.0 protocol.
const contentType = "application/x-amz-json-1.0"

// Option configures NewHandler.
type Option func(*handlerConfig)

type handlerConfig struct {
	logger       *slog.Logger
	requestID    func() string
	maxBodyBytes int64
	requireAuth  bool
	timeouts     Timeouts
}

// WithLogger sets the logger for request failures and recovered panics.
// The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *handlerConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithRequestIDs sets the generator of x-amzn-RequestId values (tests pass a
// deterministic one). The default draws 52 random base32 characters, the
// shape of DynamoDB's request ids.
func WithRequestIDs(next func() string) Option {
	return func(c *handlerConfig) {
		if next != nil {
			c.requestID = next
		}
	}
}

// WithMaxBodyBytes sets the largest request body accepted; larger requests
// answer 413 RequestEntityTooLarge without being read further.
func WithMaxBodyBytes(n int64) Option {
	return func(c *handlerConfig) {
		if n > 0 {
			c.maxBodyBytes = n
		}
	}
}

// RequireAuthorization makes a request without an Authorization header (or
// a presigned X-Amz-Signature) answer MissingAuthenticationTokenException, as
// DynamoDB does. By default unsigned requests are served too, so curl works;
// signatures are never verified either way.
func RequireAuthorization() Option {
	return func(c *handlerConfig) { c.requireAuth = true }
}

// Handler serves the DynamoDB JSON 1.0 protocol over a Backend.
type Handler struct {
	ops       map[string]operation
	streamOps map[string]operation // DynamoDB Streams, when the backend serves it
	health    func() error         // the backend's Health, when it has one
	cfg       handlerConfig
}

// healthReporter is a Backend that knows whether it can serve (the embedded
// engine: whether its data directory takes writes).
type healthReporter interface{ Health() error }

// NewHandler returns an http.Handler that serves the DynamoDB JSON 1.0
// protocol on every path: POST with X-Amz-Target DynamoDB_20120810.<Op>.
// GET and HEAD answer a health line, as DynamoDB does: 200 "healthy: <host>",
// or, when the backend has a Health method that reports a problem, 503 and
// the problem.
func NewHandler(b Backend, opts ...Option) *Handler {
	cfg := handlerConfig{
		logger:       slog.New(slog.DiscardHandler),
		requestID:    randomRequestID,
		maxBodyBytes: DefaultMaxBodyBytes,
		timeouts:     DefaultTimeouts,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &Handler{ops: operations(b), streamOps: streamsOperations(b), cfg: cfg}
	if hr, ok := b.(healthReporter); ok {
		h.health = hr.Health
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := h.cfg.requestID()
	op := ""
	defer func() {
		// Bad input must never take the server down; a panic is a bug in the
		// backend or here, reported as DynamoDB reports its own.
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.cfg.logger.Error("ddbhttp: panic serving request", "op", op, "request_id", reqID, "panic", fmt.Sprint(p))
			status, body := encodeError(errors.New("panic"))
			writeResponse(w, reqID, status, contentType, body)
		}
	}()

	setCORS(w, r)
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodHead:
		// DynamoDB answers its health line at the root only, naming the
		// host asked for.
		if r.URL.Path != "/" && r.URL.Path != "" {
			writeResponse(w, reqID, http.StatusNotFound, "text/plain", []byte("not found"))
			return
		}
		if h.health != nil {
			if err := h.health(); err != nil {
				// "degraded: ..." (reads served, writes refused until the
				// disk has room) or "failed: ..." (restart needed).
				writeResponse(w, reqID, http.StatusServiceUnavailable, "text/plain", []byte(err.Error()+" ("+r.Host+")"))
				return
			}
		}
		writeResponse(w, reqID, http.StatusOK, "text/plain", []byte("healthy: "+r.Host))
		return
	case http.MethodOptions:
		writeResponse(w, reqID, http.StatusOK, "text/plain", nil)
		return
	default:
		h.fail(w, reqID, op, &requestError{code: codeUnknownOperation, message: "DynamoDB operations are sent with POST"})
		return
	}

	target := r.Header.Get("X-Amz-Target")
	name, operation, known := h.lookup(target)
	if !known {
		h.fail(w, reqID, target, &requestError{code: codeUnknownOperation, message: unknownOperationMessage(target)})
		return
	}
	op = name

	if h.cfg.requireAuth && r.Header.Get("Authorization") == "" && r.URL.Query().Get("X-Amz-Signature") == "" {
		h.fail(w, reqID, op, &requestError{code: codeMissingAuth, message: "Request is missing Authentication Token"})
		return
	}

	body, err := decodeBody(w, r, h.cfg.maxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.fail(w, reqID, op, &requestError{code: codeTooLarge, message: fmt.Sprintf("Request body exceeds %d bytes", tooLarge.Limit)})
			return
		}
		if errors.Is(err, errBadEncoding) {
			h.fail(w, reqID, op, &requestError{code: codeInternal, message: "Internal server error"})
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// The server's read deadline (Timeouts.Read) passed mid-body.
			h.fail(w, reqID, op, &requestError{code: codeRequestTimeout,
				message: fmt.Sprintf("the request body did not arrive within %s", h.cfg.timeouts.Read)})
			return
		}
		h.fail(w, reqID, op, serializationError("reading the request body: %v", err))
		return
	}

	in := operation.newInput()
	if err := decodeRequest(body, in); err != nil {
		h.fail(w, reqID, op, err)
		return
	}
	out, err := operation.call(r.Context(), in)
	if err != nil {
		h.fail(w, reqID, op, err)
		return
	}
	if op == "DescribeEndpoints" {
		out = endpointsOf(r, out)
	}
	body = encodeShape(normalizeOutput(in, out))
	if noBodyOps[op] {
		body = nil
	}
	if len(body) >= compressThreshold {
		if enc := acceptedEncoding(r.Header.Get("Accept-Encoding")); enc != "" {
			body = compress(enc, body)
			w.Header().Set("Content-Encoding", enc)
		}
	}
	if h.cfg.logger.Enabled(r.Context(), slog.LevelDebug) {
		h.cfg.logger.Debug("ddbhttp: request served", "op", op, "request_id", reqID, "status", http.StatusOK, "response_bytes", len(body))
	}
	writeResponse(w, reqID, http.StatusOK, contentType, body)
}

// endpointsOf replaces an AWS regional address in a DescribeEndpoints answer
// (the engine's) with the address the client reached (host and port, no
// scheme, as DynamoDB answers its own), so a client that follows endpoint
// discovery stays on this server. Other answers pass through.
func endpointsOf(r *http.Request, out any) any {
	o, ok := out.(*dynamodb.DescribeEndpointsOutput)
	if !ok || r.Host == "" || len(o.Endpoints) != 1 || !strings.HasSuffix(aws.ToString(o.Endpoints[0].Address), ".amazonaws.com") {
		return out
	}
	cp := *o
	cp.Endpoints = []types.Endpoint{{Address: aws.String(r.Host), CachePeriodInMinutes: 1440}}
	return &cp
}

// noBodyOps answer success with an empty body, as DynamoDB does: their
// output shapes have no members.
var noBodyOps = map[string]bool{"TagResource": true, "UntagResource": true}

func (h *Handler) fail(w http.ResponseWriter, reqID, op string, err error) {
	status, body := encodeError(err)
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	h.cfg.logger.Log(context.Background(), level, "ddbhttp: request failed", "op", op, "request_id", reqID, "status", status, "error", err)
	writeResponse(w, reqID, status, contentType, body)
}

func unknownOperationMessage(target string) string {
	if target == "" {
		return "missing X-Amz-Target header"
	}
	return "unknown operation " + strconv.Quote(target)
}

// writeResponse sends body with the headers DynamoDB sends on every answer,
// errors included: the request id and the CRC32 (IEEE) of the exact body
// bytes, which the SDKs verify.
func writeResponse(w http.ResponseWriter, reqID string, status int, ctype string, body []byte) {
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	hdr.Set("X-Amzn-RequestId", reqID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var requestIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// randomRequestID returns 52 characters of base32, like DynamoDB's request
// ids. It uses crypto/rand: request ids are not part of any simulated run.
func randomRequestID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return requestIDEncoding.EncodeToString(b[:])
}

package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/ferryhq/ferry/internal/version"
)

// openAPIDocument is the OpenAPI 3.1 description of the API as checked in.
// TestOpenAPIMatchesRoutes keeps it in step with routeTable. Its
// info.version is a placeholder: the document is served with the build's
// version there (servedOpenAPI).
//
//go:embed openapi.json
var openAPIDocument []byte

// servedOpenAPI is openAPIDocument with info.version naming this build.
var servedOpenAPI = sync.OnceValue(func() []byte {
	doc, err := withInfoVersion(openAPIDocument, version.String())
	if err != nil {
		// TestOpenAPIInfoVersion fails first; serve the document as is.
		return openAPIDocument
	}
	return doc
})

// OpenAPIDocument returns the OpenAPI 3.1 document of the API, as GET
// /v1/openapi.json serves it: info.version is this build's version
// (internal/version).
func OpenAPIDocument() []byte { return append([]byte(nil), servedOpenAPI()...) }

// withInfoVersion returns a copy of doc whose info.version is v; every other
// byte is kept, so the document keeps its order and layout.
func withInfoVersion(doc []byte, v string) ([]byte, error) {
	from, to, err := infoVersionSpan(doc)
	if err != nil {
		return nil, err
	}
	val, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(doc)+len(val))
	out = append(out, doc[:from]...)
	out = append(out, val...)
	return append(out, doc[to:]...), nil
}

// infoVersionSpan finds the bytes of info.version's string value in doc.
func infoVersionSpan(doc []byte) (from, to int, err error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var path []string // keys of the open objects; "" for an array
	expectKey := func() bool { return len(path) > 0 && path[len(path)-1] == "\x00" }
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, errors.New("the OpenAPI document has no info.version string")
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				path = append(path, "\x00") // awaiting a key
			case '[':
				path = append(path, "")
			default:
				path = path[:len(path)-1]
				if len(path) > 0 && path[len(path)-1] != "" {
					path[len(path)-1] = "\x00"
				}
			}
			continue
		case string:
			if expectKey() {
				path[len(path)-1] = tok
				continue
			}
			if len(path) == 2 && path[0] == "info" && path[1] == "version" {
				// off is where the previous token ended (the key, or the
				// colon's side of it): the value starts at its quote.
				start := bytes.IndexByte(doc[off:], '"')
				if start < 0 {
					return 0, 0, fmt.Errorf("malformed info.version")
				}
				return int(off) + start, int(dec.InputOffset()), nil
			}
		}
		// A scalar value ended a member: await the next key.
		if len(path) > 0 && path[len(path)-1] != "" {
			path[len(path)-1] = "\x00"
		}
	}
}

package httpapi

import _ "embed"

// openAPIDocument is the OpenAPI 3.1 description of the API, served at
// GET /v1/openapi.json. TestOpenAPIMatchesRoutes keeps it in step with
// routeTable.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 document of the API.
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDocument...) }

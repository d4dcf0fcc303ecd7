package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPI is the OpenAPI document of the REST API and the webhook service.
// openapi_test.go checks it against the real handlers.
//
//go:embed openapi.yaml
var openAPI []byte

// serveOpenAPI answers GET /openapi.yaml on both listeners.
func serveOpenAPI(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", openAPI) }
